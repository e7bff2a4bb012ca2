//go:build unix && !linux

package confine

import (
	"os"
	"syscall"
	"time"
)

func changeTime(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }

func birthOf(st *syscall.Stat_t) int64 { return st.Birthtimespec.Nano() }

// birthTime is when the open file was created (BSD and macOS stat keep it).
func birthTime(f *os.File) (time.Time, bool) {
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Birthtimespec.Unix()), true
}
