//go:build unix

package lsp

import "syscall"

// mkfifo makes a named pipe at path: a file the confined reader refuses.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
