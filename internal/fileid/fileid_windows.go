package fileid

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// FromInfo is false on Windows: a FileInfo carries no file index. Of,
// Stat and Lstat read it from a handle.
func FromInfo(fs.FileInfo) (ID, bool) { return ID{}, false }

// LinksFromInfo is false on Windows: a FileInfo carries no link count.
// Links reads it from a handle.
func LinksFromInfo(fs.FileInfo) (uint64, bool) { return 0, false }

func info(h windows.Handle) (windows.ByHandleFileInformation, bool) {
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &d); err != nil {
		return d, false
	}
	return d, true
}

func idOf(d windows.ByHandleFileInformation) ID {
	return ID{Dev: uint64(d.VolumeSerialNumber), Ino: uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow)}
}

// Of is the identity of the open file f: its volume's serial number and
// its file index.
func Of(f *os.File) (ID, bool) {
	d, ok := info(windows.Handle(f.Fd()))
	if !ok {
		return ID{}, false
	}
	return idOf(d), true
}

// Links is the number of hard links of the open file f.
func Links(f *os.File) (uint64, bool) {
	d, ok := info(windows.Handle(f.Fd()))
	if !ok {
		return 0, false
	}
	return uint64(d.NumberOfLinks), true
}

// Stat is the identity of the file at path, following a final link.
func Stat(path string) (ID, bool) { return byPath(path, 0) }

// Lstat is the identity of the file at path, not following a final link
// (a symbolic link or a junction is itself).
func Lstat(path string) (ID, bool) { return byPath(path, windows.FILE_FLAG_OPEN_REPARSE_POINT) }

// byPath opens path for no access at all (what reading the identity
// needs), sharing it fully so no one else's use is disturbed; backup
// semantics open directories too.
func byPath(path string, flags uint32) (ID, bool) {
	h, err := Open(path, flags)
	if err != nil {
		return ID{}, false
	}
	defer windows.CloseHandle(h)
	d, ok := info(h)
	if !ok {
		return ID{}, false
	}
	return idOf(d), true
}

// Open opens path (a file or a directory) for no access but its
// attributes, sharing read, write and delete; flags add to
// FILE_FLAG_BACKUP_SEMANTICS (FILE_FLAG_OPEN_REPARSE_POINT: not
// following a final link). The caller closes the handle.
func Open(path string, flags uint32) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return windows.InvalidHandle, err
	}
	return windows.CreateFile(p, windows.FILE_READ_ATTRIBUTES,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS|flags, 0)
}
