//go:build unix

package confine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// TestFinderAgreesWithTheWalk: a Finder says of each path what a walk of
// the workspace says (found or not), for files that exist, and for new
// ones as a walk would find them once made; a changed .gitignore counts
// after Forget.
func TestFinderAgreesWithTheWalk(t *testing.T) {
	ws := t.TempDir()
	other := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{
		".gitignore":          "*.log\nbuild/\n!keep.log\n/top.txt\n",
		"a.go":                "",
		"x.log":               "",
		"keep.log":            "",
		"top.txt":             "",
		"sub/top.txt":         "",
		"build/out":           "",
		"sub/.gitignore":      "local\n",
		"sub/local":           "",
		"sub/deep/local":      "",
		"sub/deep/fine":       "",
		".git/HEAD":           "",
		".git/info/exclude":   "excluded\n",
		"excluded":            "",
		"secret/key":          "",
		"node_modules/m/i.js": "",
	})
	testfs.Write(t, filepath.Join(other, "o"), "")
	r := openRoot(t, ws, other)
	r.Hide(filepath.Join(ws, "secret"))
	var walked []string
	for _, dir := range r.Dirs() {
		tree, err := r.OpenTree(dir)
		must(t, err)
		must(t, tree.Walk(context.Background(), func(f File) error {
			walked = append(walked, filepath.Join(dir, filepath.FromSlash(f.Rel)))
			return nil
		}))
		tree.Close()
	}
	f := r.Finder()
	var found []string
	for _, dir := range r.Dirs() {
		must(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && f.Finds(p, false) {
				found = append(found, p)
			}
			return err
		}))
	}
	slices.Sort(walked)
	slices.Sort(found)
	if !slices.Equal(found, walked) {
		t.Errorf("the Finder finds\n %q\nthe walk\n %q", found, walked)
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{filepath.Join(ws, "new.go"), true},
		{filepath.Join(ws, "new.log"), false},
		{filepath.Join(ws, "build", "new"), false},
		{filepath.Join(ws, "sub", "deep", "local"), false},
		{filepath.Join(ws, ".git", "new"), false},
		{filepath.Join(ws, "secret", "new"), false},
		{filepath.Join(other, "new"), true},
		{"/etc/passwd", false},
		{"relative", false},
	} {
		if got := f.Finds(c.path, false); got != c.want {
			t.Errorf("Finds(%s) = %v, want %v", c.path, got, c.want)
		}
	}
	testfs.Write(t, filepath.Join(ws, ".gitignore"), "")
	if f.Finds(filepath.Join(ws, "x.log"), false) {
		t.Error("the rules read before are forgotten before Forget")
	}
	f.Forget()
	if !f.Finds(filepath.Join(ws, "x.log"), false) {
		t.Error("after Forget, the new .gitignore is not read")
	}
}
