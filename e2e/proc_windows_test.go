package e2e

import (
	"errors"

	"golang.org/x/sys/windows"
)

// mkfifo fails: Windows has no named pipes in its file system.
func mkfifo(string) error { return errors.New("Windows has no named pipes in its file system") }

// pidGone reports that no running process has the pid.
func pidGone(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return true
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}
