//go:build unix

package session

import "syscall"

// killBox kills the first process of a box and its process group: a
// namespaced box's PID 1, whose death takes every process of the box, or
// the supervisor of one without namespaces, the leader of its session.
func killBox(pid int) bool {
	err := syscall.Kill(pid, syscall.SIGKILL)
	syscall.Kill(-pid, syscall.SIGKILL)
	return err == nil
}
