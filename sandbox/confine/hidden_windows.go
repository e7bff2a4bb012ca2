package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bridle-dev/bridle/internal/fileid"
	"golang.org/x/sys/windows"
)

// fdPath returns the system's path of the file open as f
// (GetFinalPathNameByHandle): where that very file is now, whatever name,
// link or junction it was opened by, with its directories' long names
// (not 8.3 short ones) as they are spelt on disk.
func fdPath(f *os.File) (string, bool) {
	return finalPath(windows.Handle(f.Fd()))
}

// volumeNameDOS asks GetFinalPathNameByHandle for a drive letter path
// (x/sys/windows does not name it).
const volumeNameDOS = 0x0

func finalPath(h windows.Handle) (string, bool) {
	buf := make([]uint16, windows.MAX_PATH)
	for {
		n, err := windows.GetFinalPathNameByHandle(h, &buf[0], uint32(len(buf)), volumeNameDOS)
		if err != nil || n == 0 {
			return "", false
		}
		if int(n) < len(buf) {
			return dosPath(windows.UTF16ToString(buf[:n]))
		}
		buf = make([]uint16, n+1)
	}
}

// dirChain checks the directory open as dir by its identity, then every
// directory above it, up to its volume's root, by the identity its real
// path's ancestors have (Windows has no ".." of a handle; the real path
// is the system's name for that very directory).
func (g *guard) dirChain(dir *os.File, real string) (*hiddenPath, error) {
	id, ok := fileid.Of(dir)
	if !ok || real == "" {
		return nil, errors.New("bridle cannot tell what or where it is, so it cannot check that it is not hidden")
	}
	if h := g.ids[id]; h != nil {
		return h, nil
	}
	return g.above(real)
}

// fileChain checks that the real path of the file whose identity is id
// leads to that very file, then the directories above it by identity.
func (g *guard) fileChain(id fileID, real string, known bool) (*hiddenPath, error) {
	if !known {
		return nil, errors.New("bridle cannot tell where it is, so it cannot check that it is not hidden")
	}
	if now, ok := fileid.Lstat(real); !ok || now != id {
		return nil, errors.New("it moved while bridle checked that it is not hidden; try again")
	}
	return g.above(real)
}

// above checks every directory above the absolute path p by identity.
func (g *guard) above(p string) (*hiddenPath, error) {
	for range 4096 {
		up := filepath.Dir(p)
		if up == p {
			return nil, nil // the volume's root
		}
		p = up
		id, ok := fileid.Stat(p)
		if !ok {
			return nil, fmt.Errorf("cannot check that it is not hidden: %s cannot be opened", p)
		}
		if h := g.ids[id]; h != nil {
			return h, nil
		}
	}
	return nil, errors.New("cannot check that it is not hidden: too many directories above it")
}
