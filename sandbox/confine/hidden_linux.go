package confine

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// dotdotFlags open a directory for its identity only: O_PATH needs no
// read permission on it, so a directory above the workspace that the
// user may pass through but not list (a 0711 /home) is checked too.
const dotdotFlags = unix.O_PATH | unix.O_DIRECTORY

// fdPath returns the kernel's path of the file open as f: where that very
// file is now, whatever name or link it was opened by.
func fdPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || len(p) == 0 || p[0] != '/' {
		return "", false
	}
	return p, true
}
