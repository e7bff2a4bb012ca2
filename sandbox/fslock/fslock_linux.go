package fslock

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// share takes a shared lock on the byte at off, owned by f's open file
// description (F_OFD_SETLK: released when it is closed, and not shared
// with other descriptions of the same process).
func share(f *os.File, off int64) error {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: off, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// heldByOther says whether another open file description holds a lock on
// the byte at off.
func heldByOther(f *os.File, off int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: off, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, fmt.Errorf("test the lock of %s: %w", f.Name(), err)
	}
	return lk.Type != unix.F_UNLCK, nil
}

// probe checks that the system takes open file description locks (Linux
// 3.15 and later).
func probe(f *os.File) error {
	if err := share(f, 0); err != nil {
		return err
	}
	_, err := heldByOther(f, 0)
	return err
}
