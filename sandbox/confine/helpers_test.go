package confine

import (
	"context"
	"testing"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func openRoot(t *testing.T, dir string, more ...string) *Root {
	t.Helper()
	r, err := OpenRoot(dir, more...)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// walk returns the files a tree of dir lists, and the first error its
// Read gives for each (nil when it read).
func walk(t *testing.T, tree Tree, max int64) (map[string]error, error) {
	t.Helper()
	defer tree.Close()
	got := map[string]error{}
	err := tree.Walk(context.Background(), func(f File) error {
		_, err := tree.Read(f, max)
		got[f.Rel] = err
		return nil
	})
	return got, err
}

// op is one way into the workspace by a path.
type op struct {
	name string
	do   func(r *Root, p string) error
}

var ops = []op{
	{"Open", func(r *Root, p string) error {
		f, _, err := r.Open(p)
		if err == nil {
			f.Close()
		}
		return err
	}},
	{"ReadFile", func(r *Root, p string) error { _, err := r.ReadFile(p, 0); return err }},
	{"ReadDir", func(r *Root, p string) error { _, err := r.ReadDir(p); return err }},
	{"WriteFile", func(r *Root, p string) error { return r.WriteFile(p, []byte("PWNED")) }},
	{"OpenTree", func(r *Root, p string) error {
		tree, err := r.OpenTree(p)
		if err == nil {
			tree.Close()
		}
		return err
	}},
}
