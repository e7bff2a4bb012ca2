package testfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteTree(t *testing.T) {
	dir := t.TempDir()
	WriteTree(t, dir, map[string]string{"a.txt": "a", "b/c/d.txt": "d"})
	for name, want := range map[string]string{"a.txt": "a", "b/c/d.txt": "d"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	info, err := os.Stat(filepath.Join(dir, "b", "c", "d.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", info.Mode().Perm())
	}
}

func TestGoTreeIsARepository(t *testing.T) {
	dir := GoTree(t)
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if n < 5000 {
		t.Errorf("%d files copied, want Go's source tree (about 11,000 and .git)", n)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "HEAD")); err != nil {
		t.Errorf("not a git repository: %v", err)
	}
}

func TestGeneratedTree(t *testing.T) {
	dir := GeneratedTree(t, 250, false)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("%d directories, want 3 for 250 files", len(entries))
	}
	if _, err := os.Stat(filepath.Join(dir, "pkg0002", "f049.go")); err != nil {
		t.Errorf("the 250th file: %v", err)
	}
}
