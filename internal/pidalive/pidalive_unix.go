//go:build unix

package pidalive

import "syscall"

// Exists reports whether a process with this pid exists (signal 0 reaches
// it).
func Exists(pid int) bool { return syscall.Kill(pid, 0) == nil }
