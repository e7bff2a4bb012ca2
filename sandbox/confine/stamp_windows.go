package confine

import (
	"io/fs"
	"os"
	"syscall"
	"time"
)

// StampOf is the stamp of what fs.Stat or Lstat returned. A Windows
// FileInfo carries no change time, file index or link count: the stamp
// is the size, the modification time and the creation time (as Birth,
// which Same leaves out), so a command that writes a file and sets its
// modification time back, at the same size, goes unseen by a scan here.
func StampOf(fi fs.FileInfo) (Stamp, bool) {
	d, ok := fi.Sys().(*syscall.Win32FileAttributeData)
	if !ok {
		return Stamp{}, false
	}
	return Stamp{Size: fi.Size(), Mod: fi.ModTime().UnixNano(), Birth: d.CreationTime.Nanoseconds(),
		Mode: uint32(fi.Mode().Perm())}, true
}

// birthTime is when the open file was created (NTFS keeps it).
func birthTime(f *os.File) (time.Time, bool) {
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, false
	}
	d, ok := fi.Sys().(*syscall.Win32FileAttributeData)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(0, d.CreationTime.Nanoseconds()), true
}
