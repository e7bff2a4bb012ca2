//go:build unix

package fileid

import (
	"io/fs"
	"os"
	"syscall"
)

// FromInfo is the identity a stat returned, where the system keeps it in
// the FileInfo (Unix); false elsewhere: use Of, Stat or Lstat there.
func FromInfo(fi fs.FileInfo) (ID, bool) {
	if fi == nil {
		return ID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ID{}, false
	}
	return ID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, true
}

// LinksFromInfo is the number of hard links a stat returned, where the
// system keeps it in the FileInfo (Unix).
func LinksFromInfo(fi fs.FileInfo) (uint64, bool) {
	if fi == nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}

// Of is the identity of the open file f.
func Of(f *os.File) (ID, bool) {
	fi, err := f.Stat()
	if err != nil {
		return ID{}, false
	}
	return FromInfo(fi)
}

// Links is the number of hard links of the open file f.
func Links(f *os.File) (uint64, bool) {
	fi, err := f.Stat()
	if err != nil {
		return 0, false
	}
	return LinksFromInfo(fi)
}

// Stat is the identity of the file at path, following a final link.
func Stat(path string) (ID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return ID{}, false
	}
	return FromInfo(fi)
}

// Lstat is the identity of the file at path, not following a final link.
func Lstat(path string) (ID, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return ID{}, false
	}
	return FromInfo(fi)
}
