package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// recorder collects what a watcher delivers.
type recorder struct {
	mu      sync.Mutex
	batches [][]string
	all     map[string]bool
	resets  int
	// changed is signalled after each delivery.
	changed chan struct{}
}

func (r *recorder) onChange(paths []string) {
	defer func() {
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	if paths == nil {
		r.resets++
		return
	}
	r.batches = append(r.batches, paths)
	for _, p := range paths {
		r.all[p] = true
	}
}

// waitFor waits until every path in want was reported.
func (r *recorder) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		missing := slices.DeleteFunc(slices.Clone(want), func(p string) bool { return r.all[p] })
		r.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("no change reported for %v", missing)
		}
	}
}

// synced waits until the watcher has noted every change made so far.
func synced(t *testing.T, w *Watcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Sync(ctx); err != nil {
		t.Fatalf("sync the watcher: %v", err)
	}
}

func (r *recorder) seen(p string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all[p]
}

func startWatch(t *testing.T, opts WatchOptions, roots ...string) (*Watcher, *recorder) {
	t.Helper()
	r := &recorder{all: map[string]bool{}, changed: make(chan struct{}, 1)}
	opts.OnChange = r.onChange
	w, err := Watch(roots, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if !w.WaitReady(10 * time.Second) {
		t.Fatal("the watcher never got ready")
	}
	return w, r
}

// tree makes a workspace: a repository with an ignored directory.
func tree(t *testing.T) string {
	root := t.TempDir()
	for p, body := range map[string]string{
		".git/HEAD":            "ref: refs/heads/main\n",
		".gitignore":           "build/\n*.log\n",
		"src/a.go":             "package a\n",
		"src/b.go":             "package a\n",
		"build/out.bin":        "x",
		"node_modules/m/i.js":  "1",
		"docs/guide/intro.md":  "# intro\n",
		"docs/guide/.gitkeep":  "",
		"docs/guide/notes.log": "log\n",
	} {
		testfs.Write(t, filepath.Join(root, p), body)
	}
	return root
}

func TestWatcherReportsChanges(t *testing.T) {
	root := tree(t)
	outside := t.TempDir()
	w, r := startWatch(t, WatchOptions{}, root)
	if d := w.Degraded(); d != "" {
		t.Fatalf("degraded on a small tree: %s", d)
	}
	src := filepath.Join(root, "src")
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"edit", func() { testfs.Write(t, filepath.Join(src, "a.go"), "package a // edited\n") }, []string{filepath.Join(src, "a.go")}},
		{"create", func() { testfs.Write(t, filepath.Join(src, "c.go"), "package a\n") }, []string{filepath.Join(src, "c.go")}},
		{"delete", func() { os.Remove(filepath.Join(src, "b.go")) }, []string{filepath.Join(src, "b.go")}},
		{"rename", func() { os.Rename(filepath.Join(src, "c.go"), filepath.Join(src, "d.go")) },
			[]string{filepath.Join(src, "c.go"), filepath.Join(src, "d.go")}},
		{"new directory with a file, then a file in it", func() {
			testfs.Write(t, filepath.Join(root, "pkg", "x", "x.go"), "package x\n")
			synced(t, w) // the watch on pkg/x is in place
			testfs.Write(t, filepath.Join(root, "pkg", "x", "y.go"), "package x\n")
		}, []string{filepath.Join(root, "pkg", "x", "x.go"), filepath.Join(root, "pkg", "x", "y.go")}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do()
			r.waitFor(t, s.want...)
		})
	}

	// Inside ignored directories and outside the roots nothing is
	// watched: a marker change after them is reported, and they never
	// are (the watcher reports in order: what it had noted before the
	// marker is delivered by then). An ignored file in a watched
	// directory is reported (a listing shows it).
	testfs.Write(t, filepath.Join(root, "build", "out.bin"), "changed")
	testfs.Write(t, filepath.Join(root, "build", "new.bin"), "new")
	testfs.Write(t, filepath.Join(root, "node_modules", "m", "i.js"), "2")
	testfs.Write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/other\n")
	testfs.Write(t, filepath.Join(outside, "elsewhere.go"), "package e\n")
	log := filepath.Join(root, "docs", "guide", "notes.log")
	testfs.Write(t, log, "more\n")
	marker := filepath.Join(root, "docs", "guide", "intro.md")
	testfs.Write(t, marker, "# intro, edited\n")
	r.waitFor(t, marker, log)
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.all {
		if strings.Contains(p, "build") || strings.Contains(p, "node_modules") || strings.Contains(p, ".git"+string(filepath.Separator)) ||
			strings.HasPrefix(p, outside) {
			t.Errorf("reported a change nobody should see: %s", p)
		}
	}
}

// TestWatcherFollowsRenamesAndGitignore: a renamed directory's files are
// reported under the new name, a directory .gitignore stops ignoring is
// watched, and node_modules that .gitignore does not ignore is a blind
// spot for the trees above it.
func TestWatcherFollowsRenamesAndGitignore(t *testing.T) {
	root := tree(t)
	testfs.Write(t, filepath.Join(root, "pkg", "sub", "x.go"), "package sub\n")
	w, r := startWatch(t, WatchOptions{}, root)
	if w.Sees(root) {
		t.Error("the root is trusted although node_modules (not in .gitignore) is unwatched")
	}
	if !w.Sees(filepath.Join(root, "src")) {
		t.Error("src is not trusted")
	}
	if w.Sees(filepath.Join(root, "build")) {
		t.Error("build (ignored, unwatched) is trusted")
	}

	if err := os.Rename(filepath.Join(root, "pkg"), filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, filepath.Join(root, "lib"))
	synced(t, w)
	moved := filepath.Join(root, "lib", "sub", "x.go")
	testfs.Write(t, moved, "package sub // edited after the rename\n")
	r.waitFor(t, moved)
	newDir := filepath.Join(root, "lib", "sub", "deeper")
	testfs.Write(t, filepath.Join(newDir, "y.go"), "package deeper\n")
	synced(t, w)
	testfs.Write(t, filepath.Join(newDir, "z.go"), "package deeper\n")
	r.waitFor(t, filepath.Join(newDir, "z.go"))
	if r.seen(filepath.Join(root, "pkg", "sub", "x.go")) {
		t.Error("a change after the rename was reported under the old name")
	}

	// build/ stops being ignored: it is watched after the rescan.
	testfs.Write(t, filepath.Join(root, ".gitignore"), "*.log\n")
	synced(t, w)                                    // the rescan the change asks for is done
	r.waitFor(t, filepath.Join(root, ".gitignore")) // and the change is delivered
	if !w.Sees(filepath.Join(root, "build")) {
		t.Fatal("build/ was not watched after .gitignore stopped ignoring it")
	}
	out := filepath.Join(root, "build", "out.bin")
	testfs.Write(t, out, "rebuilt")
	r.waitFor(t, out)
}

func TestWatcherDebouncesABurst(t *testing.T) {
	root := tree(t)
	_, r := startWatch(t, WatchOptions{Debounce: 50 * time.Millisecond, MaxDelay: time.Second}, root)
	var want []string
	for i := range 1000 {
		p := filepath.Join(root, "src", fmt.Sprintf("gen_%03d.go", i%100))
		if i < 100 {
			want = append(want, p)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package a // %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.waitFor(t, want...)
	r.mu.Lock()
	defer r.mu.Unlock()
	// 1,000 writes to 100 files arrive as a few batches of distinct paths,
	// not 1,000 calls.
	if len(r.batches) > 10 {
		t.Errorf("a burst of 1,000 writes came in %d batches", len(r.batches))
	}
	for _, b := range r.batches {
		if len(slices.Compact(slices.Clone(b))) != len(b) {
			t.Errorf("a batch repeats paths: %d entries", len(b))
		}
	}
}

// TestWatcherLimit checks the fallback: past the watch limit the watcher
// says so, and the cache stops trusting tree dependencies.
func TestWatcherLimit(t *testing.T) {
	root := tree(t)
	w, _ := startWatch(t, WatchOptions{Limit: 2}, root)
	d := w.Degraded()
	if !strings.Contains(d, "limit of 2 directories") || !strings.Contains(d, "modification times") {
		t.Fatalf("degraded = %q", d)
	}
	if w.Trustworthy() {
		t.Fatal("a degraded watcher says it sees everything")
	}
	c := NewCache[string](w.Sees)
	file := filepath.Join(root, "src", "a.go")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(file, old, old)
	c.Put("grep", "listing", []Dep{{Path: filepath.Join(root, "src"), Tree: true}}, time.Now())
	c.Put("read", "package a\n", []Dep{{Path: file}}, time.Now())
	if _, ok := c.Get("grep"); ok {
		t.Error("a tree output was cached with a degraded watcher")
	}
	if v, ok := c.Get("read"); !ok || v != "package a\n" {
		t.Error("a file read is not cached with a degraded watcher: its modification time is checked instead")
	}
	testfs.Write(t, file, "package a // changed, unseen by the watcher\n")
	if _, ok := c.Get("read"); ok {
		t.Error("a changed file was served from the cache")
	}
}

func TestCache(t *testing.T) {
	root := tree(t)
	w, r := startWatch(t, WatchOptions{}, root)
	c := NewCache[string](w.Sees)
	a := filepath.Join(root, "src", "a.go")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(a, old, old)

	c.Put("read a", "package a\n", []Dep{{Path: a}}, time.Now())
	c.Put("grep src", "src/a.go:1", []Dep{{Path: filepath.Join(root, "src"), Tree: true}}, time.Now())
	c.Put("grep docs", "docs/guide/intro.md:1", []Dep{{Path: filepath.Join(root, "docs"), Tree: true}}, time.Now())
	for _, k := range []string{"read a", "read a", "grep src", "grep docs"} {
		if _, ok := c.Get(k); !ok {
			t.Fatalf("%s not served from the cache", k)
		}
	}
	if h, m := c.Stats(); h != 4 || m != 0 {
		t.Fatalf("stats = %d hits, %d misses", h, m)
	}

	// A search during which something was invalidated is not kept: it may
	// have read the tree before the change.
	started := time.Now()
	c.Invalidate([]string{filepath.Join(root, "elsewhere")})
	c.Put("grep src late", "src/a.go:1", []Dep{{Path: filepath.Join(root, "src"), Tree: true}}, started)
	if _, ok := c.Get("grep src late"); ok {
		t.Error("a search that overlapped an invalidation was kept")
	}
	if h, m := c.Stats(); h != 4 || m != 1 {
		t.Fatalf("stats = %d hits, %d misses", h, m)
	}

	// A read just after the file changed is not kept: it may be torn.
	b := filepath.Join(root, "src", "b.go")
	testfs.Write(t, b, "package a // fresh\n")
	c.Put("read b", "package a // fresh\n", []Dep{{Path: b}}, time.Now())
	if _, ok := c.Get("read b"); ok {
		t.Error("a read of a file modified during it was kept")
	}

	// A change in an ignored directory invalidates nothing: whatever the
	// watcher reported after b's change, up to a marker written after it.
	r.waitFor(t, b)
	r.mu.Lock()
	before := len(r.batches)
	r.mu.Unlock()
	testfs.Write(t, filepath.Join(root, "build", "out.bin"), "rebuilt")
	mark := filepath.Join(root, "marker.txt")
	testfs.Write(t, mark, "after build/\n")
	r.waitFor(t, mark)
	r.mu.Lock()
	for _, b := range r.batches[before:] {
		c.Invalidate(b)
	}
	r.mu.Unlock()
	if c.Len() != 3 {
		t.Errorf("a change in build/ (ignored) dropped entries: %d left", c.Len())
	}

	// A new file under src drops the grep of src, not that of docs.
	n := filepath.Join(root, "src", "n.go")
	testfs.Write(t, n, "package a\n")
	r.waitFor(t, n)
	r.mu.Lock()
	last := r.batches[len(r.batches)-1]
	r.mu.Unlock()
	c.Invalidate(last)
	if _, ok := c.Get("grep src"); ok {
		t.Error("grep of src survived a new file in src")
	}
	if _, ok := c.Get("grep docs"); !ok {
		t.Error("grep of docs was dropped by a change in src")
	}

	// Removing a directory drops what depended on files in it.
	c.Invalidate([]string{filepath.Join(root, "src")})
	if _, ok := c.Get("read a"); ok {
		t.Error("a read of a file in a removed directory survived")
	}
	c.DropTrees()
	if c.Len() != 0 {
		t.Errorf("DropTrees left %d entries", c.Len())
	}
}

// TestWatcherGitignoreLinksStayInside: the watcher reads .gitignore files
// through an os.Root at the workspace's top, so one that is a link
// leading out of it (here to a file outside that would ignore gen/) is
// not followed, at the top or below; one linking inside is.
func TestWatcherGitignoreLinksStayInside(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	root := filepath.Join(base, "root")
	testfs.Write(t, outside, "gen/\n")
	testfs.WriteTree(t, root, map[string]string{
		"gen/a.go":            "package gen\n",
		"sub/gen/b.go":        "package gen\n",
		"inner/rules":         "gen/\n",
		"inner/gen/c.go":      "package gen\n",
		"inner/keep/d.go":     "package keep\n",
		"inner/keep/gen/e.go": "package gen\n",
	})
	for link, target := range map[string]string{".gitignore": outside, "sub/.gitignore": "../../outside", "inner/.gitignore": "rules"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	w, _ := startWatch(t, WatchOptions{}, root)
	for _, d := range []string{"gen", "sub/gen"} {
		if !w.Sees(filepath.Join(root, d)) {
			t.Errorf("%s is not watched: a .gitignore linking out of the workspace was followed", d)
		}
	}
	if w.Sees(filepath.Join(root, "inner", "gen")) {
		t.Error("inner/gen is watched: a .gitignore linking inside the workspace was not followed")
	}
}

// picked collects what a watcher's Found is told.
type picked struct {
	mu  sync.Mutex
	all map[string]int
}

func (p *picked) found(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all[path]++
}

func (p *picked) told(path string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.all[path] > 0
}

// TestWatcherSyncAndFound: the walk tells Found of every file Pick wants,
// at any depth, and after Sync every file created, written or removed
// before it, and every watched directory removed, has been told: at once,
// not after the debounce. Nothing inside ignored directories is told.
func TestWatcherSyncAndFound(t *testing.T) {
	root := tree(t)
	deep := filepath.Join(root, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	testfs.Write(t, filepath.Join(deep, ".env"), "K=v\n")
	testfs.Write(t, filepath.Join(root, "build", ".env"), "K=ignored\n")
	p := &picked{all: map[string]int{}}
	w, _ := startWatch(t, WatchOptions{Pick: func(n string) bool { return n == ".env" }, Found: p.found,
		Debounce: time.Hour, MaxDelay: time.Hour}, root)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !p.told(filepath.Join(deep, ".env")) {
		t.Error("the walk did not tell of a .env ten directories down")
	}
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"created in a watched directory", func() error { return os.WriteFile(filepath.Join(root, "src", ".env"), []byte("A=1\n"), 0o644) },
			filepath.Join(root, "src", ".env")},
		{"created with its directories", func() error {
			return os.MkdirAll(filepath.Join(root, "new", "x", "y"), 0o755)
		}, ""},
		{"in a directory just made", func() error {
			return os.WriteFile(filepath.Join(root, "new", "x", "y", ".env"), []byte("B=2\n"), 0o644)
		}, filepath.Join(root, "new", "x", "y", ".env")},
		{"written", func() error { return os.WriteFile(filepath.Join(deep, ".env"), []byte("K=w\n"), 0o644) }, filepath.Join(deep, ".env")},
		{"a directory removed", func() error { return os.RemoveAll(filepath.Join(root, "a")) }, filepath.Join(root, "a")},
	}
	for _, s := range steps {
		p.mu.Lock()
		clear(p.all)
		p.mu.Unlock()
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(ctx); err != nil {
			t.Fatalf("%s: Sync: %v", s.name, err)
		}
		if s.want != "" && !p.told(s.want) {
			t.Errorf("%s: %s not told by the time Sync returned (told %v)", s.name, s.want, p.all)
		}
	}
	if p.told(filepath.Join(root, "build", ".env")) {
		t.Error("a .env inside an ignored directory was told")
	}
	w.Close()
	if err := w.Sync(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close = %v, want ErrClosed", err)
	}
}

// TestSyncRemovesStaleBarriers: the Sync directory a killed bridle left
// is removed by the next watcher's first Sync; a live process's is kept,
// and Close removes the watcher's own.
func TestSyncRemovesStaleBarriers(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatalf("a process that has ended is needed: %v", err)
	}
	stale := filepath.Join(tmp, fmt.Sprintf("bridle-watch-%d-x", dead.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("bridle-watch-%d-y", os.Getppid()))
	for _, d := range []string{stale, live} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w, _ := startWatch(t, WatchOptions{}, t.TempDir())
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the directory of a process that is gone is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the directory of a live process was removed: %v", err)
	}
	w.Close()
	if entries, _ := os.ReadDir(tmp); len(entries) != 1 {
		t.Errorf("after Close, %d directories in TMPDIR, want only the live process's", len(entries))
	}
}
