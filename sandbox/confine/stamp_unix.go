//go:build unix

package confine

import (
	"io/fs"
	"syscall"
)

// StampOf is the stamp of what fs.Stat or Lstat returned.
func StampOf(fi fs.FileInfo) (Stamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Stamp{}, false
	}
	return Stamp{Size: fi.Size(), Mod: fi.ModTime().UnixNano(), Change: changeTime(st), Birth: birthOf(st),
		Ino: uint64(st.Ino), Links: uint64(st.Nlink), Mode: uint32(fi.Mode().Perm())}, true
}
