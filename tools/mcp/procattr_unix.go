//go:build unix && !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// Without Pdeathsig a server outlives a bridle that dies without closing
// it until it reads the end of its stdin.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killTree ends whatever is left of the server's process group: the
// group outlives its leader while members remain (ESRCH: nothing is left).
func killTree(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
