// Package testfs holds the file helpers that tests of several packages
// share, so that each writes its fixtures the same way and reports a
// failure at the caller's line.
package testfs

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Write creates path with content (mode 0644), and its missing parent
// directories (0755). It stops the test on failure.
func Write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteTree writes each file of files (a slash-separated name below dir →
// its content) as Write does.
func WriteTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		Write(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
}

// GoSource returns the first n lines of go/parser's parser.go, vendored
// under testdata/gosrc: real code, with the words redaction looks for
// (key, token, auth), for what reading or counting a file costs.
func GoSource(tb testing.TB, n int) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "testdata", "gosrc", "parser.go"))
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) < n {
		tb.Fatalf("parser.go has %d lines, want %d", len(lines), n)
	}
	return strings.Join(lines[:n], "")
}
