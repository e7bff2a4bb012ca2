// Package testbin builds the programs under testdata/ that tests run (the
// language server; the MCP server's internal/mcptest can move onto it),
// once per test process each, and removes them when the tests are done.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

type built struct {
	once      sync.Once
	dir, path string
	err       error
}

var (
	mu    sync.Mutex
	byDir = map[string]*built{}
)

// Build returns testdata/name built, once per test process, into a
// directory of its own (a test may put it, alone, on PATH); what is
// names it in the error that fails the test when it does not build.
func Build(t testing.TB, name, what string) string {
	t.Helper()
	mu.Lock()
	b := byDir[name]
	if b == nil {
		b = &built{}
		byDir[name] = b
	}
	mu.Unlock()
	b.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "bridle-"+name+"-")
		if err != nil {
			b.err = err
			return
		}
		b.dir, b.path = dir, filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", b.path, "./testdata/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build %s: %v\n%s", what, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Cleanup removes what Build built, so that tests leave nothing in the
// temporary directory: a test package's TestMain calls it once its tests
// have run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	for _, b := range byDir {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
}
