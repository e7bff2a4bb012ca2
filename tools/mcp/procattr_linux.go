package mcp

import "syscall"

// SIGKILL if bridle dies without closing the server.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
