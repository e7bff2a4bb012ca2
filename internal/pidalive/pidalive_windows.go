package pidalive

import "golang.org/x/sys/windows"

// stillActive is what GetExitCodeProcess says of a process that runs.
const stillActive = 259

// Exists reports whether a process with this pid runs: a process that has
// exited but whose handle someone still holds does not.
func Exists(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code == stillActive
}
