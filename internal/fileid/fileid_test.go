package fileid

import (
	"os"
	"path/filepath"
	"testing"
)

// Two names of one file have one identity and count two links; another
// file, and a directory, have their own identities.
func TestIdentityAndLinks(t *testing.T) {
	dir, err := os.MkdirTemp("", "fileid-")
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	defer func() {
		for _, p := range []string{a, b, c, dir} {
			os.Remove(p) // one at a time: see internal/testfs.TempDir
		}
	}()
	for _, p := range []string{a, c} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	ia, ok1 := Stat(a)
	ib, ok2 := Lstat(b)
	ic, ok3 := Stat(c)
	id, ok4 := Stat(dir)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatalf("no identity: %v %v %v %v", ok1, ok2, ok3, ok4)
	}
	if ia != ib {
		t.Errorf("two names of one file: %v and %v", ia, ib)
	}
	if ia == ic || ia == id || ic == id {
		t.Errorf("three files share an identity: %v %v %v", ia, ic, id)
	}
	f, err := os.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if io, ok := Of(f); !ok || io != ia {
		t.Errorf("the open file is %v, its name %v", io, ia)
	}
	if n, ok := Links(f); !ok || n != 2 {
		t.Errorf("links = %d, %v; want 2", n, ok)
	}
	if _, ok := Stat(filepath.Join(dir, "none")); ok {
		t.Errorf("a missing file has an identity")
	}
}
