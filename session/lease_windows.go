package session

import (
	"strconv"

	"golang.org/x/sys/windows"
)

// stillActive is what GetExitCodeProcess says of a process that runs.
const stillActive = 259

// pidExists reports whether a process with this pid runs.
func pidExists(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code == stillActive
}

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
	var code uint32
	if windows.GetExitCodeProcess(h, &code) != nil || code != stillActive {
		return "" // exited: the handle outlives the process
	}
	return strconv.FormatUint(uint64(created.HighDateTime)<<32|uint64(created.LowDateTime), 10)
}

// bootID is "unknown" on Windows: the creation time in a holder tells a
// process from another that got its pid after a reboot.
func bootID() string { return "unknown" }
