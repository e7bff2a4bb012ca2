package confine

// Stamp tells one version of a file from another without reading it:
// its size, modification and change times (ns) and inode. Change time
// moves with any write or rename, even when a tool sets the modification
// time back. Birth time, where the filesystem keeps it, tells a file
// created during a command from one that was there but unseen (say,
// ignored until .gitignore changed), which a change time cannot: the
// command may have written to it too.
type Stamp struct {
	Size   int64
	Mod    int64
	Change int64
	// Birth is 0 where the filesystem does not keep it.
	Birth int64
	Ino   uint64
	Links uint64
	// Mode is the permission bits, for a file put back as it was.
	Mode uint32
}

// Same reports whether two stamps are of one version of a file, whatever
// way each was taken (a birth time may be known to one only).
func (s Stamp) Same(o Stamp) bool {
	s.Birth, o.Birth = 0, 0
	return s == o
}
