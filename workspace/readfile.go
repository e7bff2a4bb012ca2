package workspace

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxProjectFile bounds what bridle reads of a file the repository
// provides for its own use (AGENTS.md, settings, .gitignore): a
// repository cannot make bridle read without end.
const MaxProjectFile = 4 << 20

// noWait opens for reading without waiting: opening a named pipe blocks
// until a writer comes, and a repository can hold one where a file is
// expected (mkfifo AGENTS.md), or rename one over a file between a look
// at it and its open. Reads of regular files are unaffected by
// O_NONBLOCK; the callers check the type on the open file and refuse
// every other one.
const noWait = os.O_RDONLY | syscall.O_NONBLOCK

// OpenNoWait opens name below root for reading without waiting (see
// noWait); the caller checks what it opened (f.Stat) before reading.
func OpenNoWait(root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, noWait, 0)
}

// ReadRegular reads the file at path if it is a regular file. A named
// pipe, socket or device in a repository would block a plain read
// forever or never end: the open does not wait, and anything but a
// regular file is refused. Files over MaxProjectFile are read up to it.
func ReadRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, noWait, 0)
	if err != nil {
		return nil, err
	}
	return readOpened(f, path, MaxProjectFile)
}

// ReadRegularIn is ReadRegular for the file name below root (os.Root:
// a link leading out of it is not followed). There is one open and the
// type is checked on the file it opened, so a named pipe renamed over
// the name at any moment is refused, never waited on.
func ReadRegularIn(root *os.Root, name string) ([]byte, error) {
	return ReadRegularInN(root, name, MaxProjectFile)
}

// ReadRegularInN is ReadRegularIn that reads at most n bytes.
func ReadRegularInN(root *os.Root, name string, n int64) ([]byte, error) {
	f, err := OpenNoWait(root, name)
	if err != nil {
		return nil, err
	}
	return readOpened(f, name, n)
}

// readOpened reads at most n bytes of f, opened without waiting, if it is
// a regular file, and closes it.
func readOpened(f *os.File, name string, n int64) ([]byte, error) {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := regular(name, fi); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// regular refuses what is not a regular file, naming what it is.
func regular(name string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s is %s, not a regular file: not read", name, KindOf(fi.Mode()))
}

// KindOf names a file type for messages.
func KindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}
