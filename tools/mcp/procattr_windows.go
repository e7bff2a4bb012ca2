package mcp

import (
	"os/exec"
	"syscall"
)

func serverProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// killTree ends the server's process.
func killTree(cmd *exec.Cmd) { cmd.Process.Kill() }
