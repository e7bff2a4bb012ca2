//go:build unix

package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirChain checks the directory open as dir, and every directory above
// it, by identity (its real path is real, "" if unknown).
func (g *guard) dirChain(dir *os.File, real string) (*hiddenPath, error) {
	return g.chain(int(dir.Fd()))
}

// fileChain checks the directory holding the file whose identity is id
// and real path real (known says real is the kernel's, not the model's
// name): that it holds this very file, then it and every directory above
// it by identity.
func (g *guard) fileChain(id fileID, real string, known bool) (*hiddenPath, error) {
	dir, err := openDirOf(real)
	if err != nil {
		return nil, fmt.Errorf("cannot check that it is not hidden: %w", err)
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, filepath.Base(real), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || uint64(st.Dev) != id.Dev || uint64(st.Ino) != id.Ino {
		if !known {
			return nil, errors.New("bridle cannot tell where it leads (no /proc/self/fd), so it cannot check that it is not hidden")
		}
		return nil, errors.New("it moved while bridle checked that it is not hidden; try again")
	}
	return g.chain(dir)
}

// chain checks the directory fd and every directory above it, up to
// "/", by identity.
func (g *guard) chain(fd int) (*hiddenPath, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	id := fileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
	cur := -1
	defer func() {
		if cur >= 0 {
			unix.Close(cur)
		}
	}()
	for range 4096 {
		if h := g.ids[id]; h != nil {
			return h, nil
		}
		from := fd
		if cur >= 0 {
			from = cur
		}
		up, err := openat(from, "..", dotdotFlags)
		if err != nil {
			return nil, fmt.Errorf("cannot check that it is not hidden: %w", err)
		}
		if cur >= 0 {
			unix.Close(cur)
		}
		cur = up
		if err := unix.Fstat(cur, &st); err != nil {
			return nil, err
		}
		upID := fileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
		if upID == id {
			return nil, nil // "/": its own parent
		}
		id = upID
	}
	return nil, errors.New("cannot check that it is not hidden: too many directories above it")
}

func openat(dir int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openDirOf opens the directory holding the absolute path p (for its
// identity only).
func openDirOf(p string) (int, error) {
	return openat(unix.AT_FDCWD, filepath.Dir(p), dotdotFlags)
}
