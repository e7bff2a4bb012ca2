package confine

import (
	"io/fs"
	"syscall"
)

// Stamp tells one version of a file from another without reading it:
// its size, modification and change times (ns) and inode. Change time
// moves with any write or rename, even when a tool sets the modification
// time back; it also tells a file created during a command from one that
// was there but unseen (say, ignored until .gitignore changed).
type Stamp struct {
	Size   int64
	Mod    int64
	Change int64
	Ino    uint64
	Links  uint64
	// Mode is the permission bits, for a file put back as it was.
	Mode uint32
}

func stampOf(fi fs.FileInfo) (Stamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Stamp{}, false
	}
	return Stamp{Size: fi.Size(), Mod: fi.ModTime().UnixNano(), Change: changeTime(st), Ino: uint64(st.Ino), Links: uint64(st.Nlink), Mode: uint32(fi.Mode().Perm())}, true
}
