package mcp

import (
	"os/exec"
	"syscall"
)

func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killTree ends whatever is left of the server's process group: the
// group outlives its leader while members remain (ESRCH: nothing is left).
func killTree(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
