//go:build unix

package e2e

import "syscall"

// mkfifo makes a named pipe at path.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

// pidGone reports that no process has the pid (ESRCH).
func pidGone(pid int) bool { return syscall.Kill(pid, 0) != nil }
