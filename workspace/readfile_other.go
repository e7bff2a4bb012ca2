//go:build !unix

package workspace

import "os"

func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
