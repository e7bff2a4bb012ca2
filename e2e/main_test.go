package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/lsptest"
	"github.com/bridle-dev/bridle/internal/mcptest"
)

// TestMain runs the tests with TMPDIR in a directory of their own,
// removed afterwards with the binaries they built (bridle, the test MCP
// server, the fake language server): what a bridle the tests killed left
// behind (its box's temp dir, a probe's) goes too, and the tests leave
// nothing in the machine's temporary directory.
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "bridle-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: a temporary directory:", err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	acptest.Cleanup()
	mcptest.Cleanup()
	lsptest.Cleanup()
	if err := removeAll(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: removing the tests' temporary directory:", err)
	}
	os.Exit(code)
}

// removeAll removes dir even where a test (or a command it ran) took
// away a directory's write or search permission.
func removeAll(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
