package testfs

import (
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
