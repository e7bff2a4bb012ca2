// Package lsptest builds testdata/lspserver, the small language server
// bridle's tests run (its diagnostics are written in the files it is
// given; -mode makes it misbehave), so the lsp package's tests and the
// end-to-end tests share one way of getting it.
package lsptest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testbin"
)

// Binary returns the test server, built once per test process, in a
// directory of its own (so a test can put it, alone, on PATH).
func Binary(t testing.TB) string {
	t.Helper()
	return testbin.Build(t, "lspserver", "the test language server")
}

// Cleanup removes the test server Binary built (TestMain calls it once
// the package's tests have run).
func Cleanup() { testbin.Cleanup() }

// GoplsVersion is the gopls the tests run, installed by make test
// (scripts/ensure-test-tools) into .tools/bin.
const GoplsVersion = "v0.23.0"

// Gopls returns the directory holding the pinned gopls, failing the test
// with how to install it when it is not there.
func Gopls(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", ".tools", "bin")
	dir, _ = filepath.Abs(dir)
	out, err := exec.Command(filepath.Join(dir, "gopls"), "version").Output()
	if err != nil || !strings.Contains(string(out), GoplsVersion) {
		t.Fatalf("this test runs gopls %s from %s, which is not there (%v, %q): run `make tools` (scripts/ensure-test-tools), or "+
			"GOBIN=$PWD/.tools/bin go install golang.org/x/tools/gopls@%s in the repository", GoplsVersion, dir, err, out, GoplsVersion)
	}
	return dir
}
