//go:build unix && !linux

package mcp

import "syscall"

// Without Pdeathsig a server outlives a bridle that dies without closing
// it until it reads the end of its stdin.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
