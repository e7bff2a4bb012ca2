package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// TestCacheBoundDropsTheLeastRecentlyUsed fills a bounded cache past its
// bound: the entry used least recently goes first, the total stays under
// the bound, and an entry larger than the bound is never kept.
func TestCacheBoundDropsTheLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	dep := func(name string) []Dep {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
		return []Dep{{Path: p}}
	}
	c := NewCache[string](nil)
	c.Bound(10, func(v string) int { return len(v) })
	c.Put("a", "aaaa", dep("a"), time.Now())
	c.Put("b", "bbbb", dep("b"), time.Now())
	if _, ok := c.Get("a"); !ok { // a is now the most recently used
		t.Fatal("a not kept")
	}
	c.Put("c", "cccc", dep("c"), time.Now()) // 12 > 10: b goes
	for key, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, ok := c.Get(key); ok != want {
			t.Errorf("%s kept: %v, want %v", key, ok, want)
		}
	}
	if n := c.Size(); n != 8 || c.Len() != 2 {
		t.Fatalf("size %d, %d entries; want 8 in 2", n, c.Len())
	}
	c.Put("huge", "hhhhhhhhhhhh", dep("huge"), time.Now())
	if _, ok := c.Get("huge"); ok || c.Len() != 2 {
		t.Fatalf("an entry over the bound was kept (%d entries)", c.Len())
	}
	c.Put("a", "aa", dep("a"), time.Now()) // replacing frees the old size
	if n := c.Size(); n != 6 {
		t.Fatalf("size %d after replacing a, want 6", n)
	}
	c.Invalidate([]string{filepath.Join(dir, "c")})
	if n := c.Size(); n != 2 || c.Len() != 1 {
		t.Fatalf("size %d, %d entries after invalidating c; want 2 in 1", n, c.Len())
	}
	c.Invalidate(nil)
	if c.Size() != 0 || c.Len() != 0 {
		t.Fatal("not empty after invalidating everything")
	}
}

// TestCacheVersionIsTheFilesIdentity: an entry is served while its file
// is the one read, and not once another file of the same size and
// modification time is renamed over it; Put and Get take the version the
// same way (on Windows the identity comes from a handle, not the stat).
func TestCacheVersionIsTheFilesIdentity(t *testing.T) {
	dir := testfs.TempDir(t)
	p, other := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{p, other} {
		if err := os.WriteFile(f, []byte("same"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	c := NewCache[string](nil)
	c.Put("k", "v", []Dep{{Path: p}}, time.Now())
	if _, ok := c.Get("k"); !ok {
		t.Fatal("an entry whose file did not change was not served")
	}
	if err := os.Rename(other, p); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("k"); ok {
		t.Error("an entry was served after another file was renamed over its file")
	}
}
