//go:build !unix

package lsp

import "errors"

// mkfifo: no named pipes at a path here (the box, and so these tests'
// servers, are Linux's).
func mkfifo(string) error { return errors.New("no named pipes on this system") }
