// Package lsptest builds testdata/lspserver, the small language server
// bridle's tests run (its diagnostics are written in the files it is
// given; -mode makes it misbehave), so the lsp package's tests and the
// end-to-end tests share one way of getting it.
package lsptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the test server, built once per test process, in a
// directory of its own (so a test can put it, alone, on PATH).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "bridle-lspserver-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "lspserver")
		cmd := exec.Command("go", "build", "-o", binPath, "./testdata/lspserver")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build the test language server: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}
