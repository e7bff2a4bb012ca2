package confine

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func changeTime(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

// birthOf is unknown from stat here: statx has it (fastTree.Stat).
func birthOf(*syscall.Stat_t) int64 { return 0 }

// birthTime is when the open file was created, where the filesystem
// keeps it (statx's STATX_BTIME: ext4, btrfs, xfs, tmpfs).
func birthTime(f *os.File) (time.Time, bool) {
	var stx unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_BTIME, &stx); err != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}, false
	}
	return time.Unix(stx.Btime.Sec, int64(stx.Btime.Nsec)), true
}
