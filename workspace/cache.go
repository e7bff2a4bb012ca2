package workspace

import (
	"container/list"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/internal/fileid"
	"github.com/bridle-dev/bridle/internal/pathcmp"
)

// Dep is something a tool's output depended on.
type Dep struct {
	// Path is absolute.
	Path string
	// Tree says the output depended on everything under Path (a listing,
	// a glob, a search); otherwise on the one file at Path.
	Tree bool
}

// FileVersion identifies the content of the file at path without reading
// it: size, modification time and identity (the inode; on Windows the
// volume and file index, read from a handle). It is "" when there is no
// file.
func FileVersion(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return versionAt(path, fi)
}

// versionAt is FileVersion of path, which fi describes. Where a FileInfo
// carries the identity (Unix) it is VersionOf(fi); elsewhere the
// identity is read from the file by its path, so a version is the same
// whichever of Put and Get took it.
func versionAt(path string, fi os.FileInfo) string {
	if _, ok := fileid.FromInfo(fi); ok {
		return VersionOf(fi)
	}
	id, _ := fileid.Stat(path)
	return fmt.Sprintf("%d:%d:%d:%d", fi.Size(), fi.ModTime().UnixNano(), id.Ino, id.Dev)
}

// VersionOf is a file's version from its FileInfo alone: its size,
// modification time and inode. It is FileVersion's where a FileInfo
// carries the inode (Unix); on Windows it has none and is only ever
// compared with another VersionOf.
func VersionOf(fi os.FileInfo) string {
	id, _ := fileid.FromInfo(fi)
	return fmt.Sprintf("%d:%d:%d", fi.Size(), fi.ModTime().UnixNano(), id.Ino)
}

// Cache keeps tool outputs keyed by tool and arguments, each with what it
// depended on. A file dependency is checked against the file's version on
// every Get, so a cached read is never older than the file, whatever the
// watcher has seen yet; a tree dependency is trusted only while
// sees(tree) says every change under it has been reported through
// Invalidate.
type Cache[V any] struct {
	sees func(dir string) bool

	mu           sync.Mutex
	entries      map[string]*cacheEntry[V]
	hits, misses int
	// invalidated is when Invalidate or DropTrees last ran: an output
	// with a tree dependency read before then may be stale already.
	invalidated time.Time
	// With a bound (Bound), recent orders the keys from the most recently
	// used, and size is the entries' total.
	max, size int
	sizeOf    func(V) int
	recent    *list.List
}

type cacheEntry[V any] struct {
	v    V
	key  string
	size int
	elem *list.Element
	deps []Dep
	// vers holds each file dependency's version when it was read.
	vers []string
}

// NewCache returns an empty cache; sees reports whether a dependency on
// the tree under dir can be trusted (Watcher.Sees), nil for never.
func NewCache[V any](sees func(dir string) bool) *Cache[V] {
	if sees == nil {
		sees = func(string) bool { return false }
	}
	return &Cache[V]{sees: sees, entries: map[string]*cacheEntry[V]{}, recent: list.New()}
}

// Bound keeps the entries' total size (as sizeOf measures each) at most
// max, dropping the least recently used first: a long session reads
// thousands of files, and their outputs must not stay in memory for its
// whole life. An entry larger than max alone is not kept. Call it before
// the first Put.
func (c *Cache[V]) Bound(max int, sizeOf func(V) int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max, c.sizeOf = max, sizeOf
}

// put keeps e, evicting what the bound requires; c.mu is held.
func (c *Cache[V]) put(e *cacheEntry[V]) {
	if c.sizeOf != nil {
		e.size = c.sizeOf(e.v)
		if e.size > c.max {
			return
		}
	}
	if old := c.entries[e.key]; old != nil {
		c.remove(old)
	}
	c.entries[e.key] = e
	e.elem = c.recent.PushFront(e)
	c.size += e.size
	for c.sizeOf != nil && c.size > c.max {
		c.remove(c.recent.Back().Value.(*cacheEntry[V]))
	}
}

// remove drops e; c.mu is held.
func (c *Cache[V]) remove(e *cacheEntry[V]) {
	delete(c.entries, e.key)
	c.recent.Remove(e.elem)
	c.size -= e.size
}

// racyWindow is the modification-time granularity allowed for: a file
// changed this close to the read may have changed during it without its
// time showing it, so the read is not cached.
const racyWindow = 10 * time.Millisecond

// Put keeps v under key. since is when the tool started reading: a file
// modified after it (or just before) may not be what v holds, so v is not
// kept. Outputs with no dependencies, or with tree dependencies that
// cannot be trusted now or saw an invalidation while they were read, are
// not kept either.
func (c *Cache[V]) Put(key string, v V, deps []Dep, since time.Time) {
	if len(deps) == 0 {
		return
	}
	e := &cacheEntry[V]{v: v, key: key, deps: deps}
	for _, d := range deps {
		if d.Tree {
			c.mu.Lock()
			raced := !c.invalidated.Before(since)
			c.mu.Unlock()
			if raced || !c.sees(d.Path) {
				return
			}
			continue
		}
		fi, err := os.Stat(d.Path)
		if err != nil || !fi.ModTime().Before(since.Add(-racyWindow)) {
			return
		}
		e.vers = append(e.vers, versionAt(d.Path, fi))
	}
	c.mu.Lock()
	c.put(e)
	c.mu.Unlock()
}

// Get returns the output kept under key if nothing it depended on has
// changed.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	e := c.entries[key]
	c.mu.Unlock()
	var zero V
	if e == nil || !c.valid(e) {
		c.mu.Lock()
		if e != nil && c.entries[key] == e {
			c.remove(e)
		}
		c.misses++
		c.mu.Unlock()
		return zero, false
	}
	c.mu.Lock()
	c.hits++
	if c.entries[key] == e {
		c.recent.MoveToFront(e.elem)
	}
	c.mu.Unlock()
	return e.v, true
}

func (c *Cache[V]) valid(e *cacheEntry[V]) bool {
	i := 0
	for _, d := range e.deps {
		if d.Tree {
			if !c.sees(d.Path) {
				return false
			}
			continue
		}
		if FileVersion(d.Path) != e.vers[i] {
			return false
		}
		i++
	}
	return true
}

// Invalidate drops every entry that depended on one of paths (or on
// something under them: a directory removed or renamed). Nil drops all.
func (c *Cache[V]) Invalidate(paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.invalidated = time.Now()
	if paths == nil {
		clear(c.entries)
		c.recent.Init()
		c.size = 0
		return
	}
	for _, e := range c.entries {
		if dependsOn(e.deps, paths) {
			c.remove(e)
		}
	}
}

// DropTrees drops the entries with tree dependencies: after the agent's
// own edit or command, before the watcher has reported what changed.
func (c *Cache[V]) DropTrees() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.invalidated = time.Now()
	for _, e := range c.entries {
		for _, d := range e.deps {
			if d.Tree {
				c.remove(e)
				break
			}
		}
	}
}

// Stats returns how many Gets were served and how many were not.
func (c *Cache[V]) Stats() (hits, misses int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// Size returns the entries' total size as Bound measures it (0 without
// a bound).
func (c *Cache[V]) Size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// Len returns the number of entries kept.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func dependsOn(deps []Dep, paths []string) bool {
	for _, d := range deps {
		for _, p := range paths {
			if p == d.Path || Within(d.Path, p) || (d.Tree && Within(p, d.Path)) {
				return true
			}
		}
	}
	return false
}

// Within reports whether p is strictly under dir (as the system compares
// names: on Windows without regard to case).
func Within(p, dir string) bool { return pathcmp.Under(p, dir) }
