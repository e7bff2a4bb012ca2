package workspace

import (
	"fmt"
	"io"
	"io/fs"
)

// MaxProjectFile bounds what bridle reads of a file the repository
// provides for its own use (AGENTS.md, settings, .gitignore): a
// repository cannot make bridle read without end.
const MaxProjectFile = 4 << 20

// ReadRegular reads the file at path if it is a regular file. A named
// pipe, socket or device in a repository (mkfifo AGENTS.md) would block a
// plain read forever or never end: the open does not wait (O_NONBLOCK),
// and anything but a regular file is refused. Files over MaxProjectFile
// are read up to it.
func ReadRegular(path string) ([]byte, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, MaxProjectFile))
}

// ReadRegularFS is ReadRegular for a file of fsys: its type is checked
// before it is opened.
func ReadRegularFS(fsys fs.FS, name string) ([]byte, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := regular(name, fi); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxProjectFile))
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
