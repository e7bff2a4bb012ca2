package session

import (
	"strconv"

	"github.com/bridle-dev/bridle/internal/pidalive"
	"golang.org/x/sys/windows"
)

// startTime is a process's creation time (100 ns since 1601), or "" when
// it cannot be read; a pid reused by another process has another one.
func startTime(pid int) string {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return ""
	}
	defer windows.CloseHandle(h)
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return ""
	}
	// h keeps the pid from being reused, so this is the same process:
	// one that exited lives on as an object while a handle holds it.
	if !pidalive.Exists(pid) {
		return ""
	}
	return strconv.FormatUint(uint64(created.HighDateTime)<<32|uint64(created.LowDateTime), 10)
}

// bootID is "unknown" on Windows: the creation time in a holder tells a
// process from another that got its pid after a reboot.
func bootID() string { return "unknown" }
