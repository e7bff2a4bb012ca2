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

// TempDir is t.TempDir for tests that also run under Wine: its cleanup
// removes one entry at a time (os.Remove, DeleteFileW on Windows), where
// os.RemoveAll asks for FileDispositionInformationEx, which Wine 8's
// ntdll lacks ("Invalid function").
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", strings.NewReplacer("/", "_", "\\", "_").Replace(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := removeTree(dir); err != nil {
			t.Errorf("TempDir cleanup: %v", err)
		}
	})
	return dir
}

// removeTree removes dir and what it holds, deepest first, without
// following links.
func removeTree(dir string) error {
	var all []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		all = append(all, p)
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if err := os.Remove(all[i]); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
