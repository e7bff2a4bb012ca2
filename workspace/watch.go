package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions tune a Watcher.
type WatchOptions struct {
	// Debounce is how long the tree must be quiet before a batch of
	// changes is delivered (default 50 ms); a burst that never goes quiet
	// is delivered every MaxDelay (default 500 ms).
	Debounce, MaxDelay time.Duration
	// Limit caps the directories watched; 0 is the OS's own limit
	// (fs.inotify.max_user_watches on Linux). Past it the watcher is
	// degraded, as when the OS refuses a watch.
	Limit int
	// OnChange receives each batch of changed paths (absolute, sorted),
	// and nil after an event overflow, when anything may have changed.
	OnChange func(paths []string)
	// OnDegraded is told, once, why not every directory is watched.
	OnDegraded func(reason string)
	Logger     *slog.Logger
}

// Watcher reports changes under a session's directories, skipping .git,
// node_modules and what .gitignore files ignore. When the OS will not
// watch every directory, it says so once (Degraded) and users of it check
// modification times instead.
type Watcher struct {
	opts  WatchOptions
	roots []string
	fsw   *fsnotify.Watcher

	mu sync.Mutex
	// ignores holds, for each watched directory, the rules that apply in
	// it, and the root it is under.
	ignores  map[string]dirRules
	degraded string
	ready    bool
	pending  map[string]bool
	overflow bool

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

type dirRules struct {
	root string
	ig   *Ignore
}

// readyWait is how long Watch waits for the directories to be added.
const readyWait = 250 * time.Millisecond

// Watch starts watching roots (absolute directories). The directories are
// added in the background (Watch waits a little for them); Ready says when
// all are.
func Watch(roots []string, opts WatchOptions) (*Watcher, error) {
	if opts.Debounce <= 0 {
		opts.Debounce = 50 * time.Millisecond
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = 500 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	fsw, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return nil, fmt.Errorf("watch the workspace: %w", err)
	}
	w := &Watcher{opts: opts, roots: roots, fsw: fsw, ignores: map[string]dirRules{}, pending: map[string]bool{},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	w.wg.Add(2)
	added := make(chan struct{})
	go func() {
		defer w.wg.Done()
		for _, r := range roots {
			w.addTree(r, r, nil)
		}
		w.mu.Lock()
		w.ready = true
		w.mu.Unlock()
		close(added)
	}()
	go w.loop()
	// A usual tree is added in a few milliseconds: wait for it, so the
	// first tool calls are cached; a huge one goes on in the background.
	select {
	case <-added:
	case <-time.After(readyWait):
	}
	return w, nil
}

// Close stops watching.
func (w *Watcher) Close() error {
	select {
	case <-w.done:
		return nil
	default:
	}
	close(w.done)
	err := w.fsw.Close()
	w.wg.Wait()
	return err
}

// Ready reports whether every directory has been added: until then a
// change in a directory not yet watched goes unseen.
func (w *Watcher) Ready() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready
}

// Degraded says why not every directory is watched ("" when all are).
func (w *Watcher) Degraded() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.degraded
}

// Watched returns the number of directories watched.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ignores)
}

// Trustworthy reports whether a change anywhere under the roots would be
// seen: the watcher is ready and not degraded.
func (w *Watcher) Trustworthy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready && w.degraded == ""
}

// skipDir names the directories never watched, whatever .gitignore says.
func skipDir(name string) bool { return name == ".git" || name == "node_modules" }

// addTree watches dir and every directory below it that is not ignored.
// With found set, the files already in them are reported as changed: they
// were created before the watch could see them.
func (w *Watcher) addTree(root, dir string, found map[string]bool) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		select {
		case <-w.done:
			return filepath.SkipAll
		default:
		}
		if !d.IsDir() {
			if found != nil && !w.ignored(p, false) {
				found[p] = true
			}
			return nil
		}
		if p != dir && w.ignored(p, true) {
			return filepath.SkipDir
		}
		if !w.add(root, p, w.rulesFor(root, p)) {
			return filepath.SkipAll
		}
		return nil
	})
}

// rulesFor returns the .gitignore rules that apply inside dir.
func (w *Watcher) rulesFor(root, dir string) *Ignore {
	w.mu.Lock()
	parent, ok := w.ignores[filepath.Dir(dir)]
	w.mu.Unlock()
	if !ok || dir == root {
		return Load(os.DirFS(root), relSlash(root, dir))
	}
	if data, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
		return parent.ig.With(relSlash(root, dir), data)
	}
	return parent.ig
}

// add watches one directory; it returns false once the watcher is
// degraded.
func (w *Watcher) add(root, dir string, ig *Ignore) bool {
	w.mu.Lock()
	if w.degraded != "" {
		w.mu.Unlock()
		return false
	}
	n := len(w.ignores)
	w.mu.Unlock()
	var err error
	if w.opts.Limit > 0 && n >= w.opts.Limit {
		err = fmt.Errorf("the watcher's limit of %d directories was reached", w.opts.Limit)
	} else if err = w.fsw.Add(dir); err == nil {
		w.mu.Lock()
		w.ignores[dir] = dirRules{root: root, ig: ig}
		w.mu.Unlock()
		return true
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, os.ErrPermission) {
		return true // gone meanwhile, or not this user's to read
	}
	if errors.Is(err, syscall.ENOSPC) {
		err = fmt.Errorf("the OS limit on file watches (fs.inotify.max_user_watches) was reached")
	}
	w.mu.Lock()
	w.degraded = fmt.Sprintf("%v after %d directories; changes elsewhere are found by checking modification times when an output is used (raise the limit with sysctl fs.inotify.max_user_watches=524288)", err, n)
	w.mu.Unlock()
	reason := w.Degraded()
	w.opts.Logger.Warn("the workspace is not fully watched", "reason", reason)
	if w.opts.OnDegraded != nil {
		w.opts.OnDegraded(reason)
	}
	return false
}

func relSlash(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// ignored reports whether a change at p is of no interest: inside a
// directory nobody watches for it, or a path .gitignore ignores.
func (w *Watcher) ignored(p string, isDir bool) bool {
	if skipDir(filepath.Base(p)) {
		return true
	}
	w.mu.Lock()
	r, ok := w.ignores[filepath.Dir(p)]
	w.mu.Unlock()
	if !ok {
		return false
	}
	return r.ig.Match(relSlash(r.root, p), isDir)
}

func (w *Watcher) loop() {
	defer w.wg.Done()
	var timer <-chan time.Time
	var first time.Time
	flush := func() {
		w.mu.Lock()
		paths := make([]string, 0, len(w.pending))
		for p := range w.pending {
			paths = append(paths, p)
		}
		overflow := w.overflow
		w.pending, w.overflow = map[string]bool{}, false
		w.mu.Unlock()
		timer, first = nil, time.Time{}
		if w.opts.OnChange == nil {
			return
		}
		if overflow {
			w.opts.OnChange(nil)
			return
		}
		if len(paths) > 0 {
			slices.Sort(paths)
			w.opts.OnChange(paths)
		}
	}
	arm := func() {
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		wait := w.opts.Debounce
		if left := w.opts.MaxDelay - now.Sub(first); left < wait {
			wait = max(left, 0)
		}
		timer = time.After(wait)
	}
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			w.note(ev)
			arm()
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.mu.Lock()
				w.overflow = true
				w.mu.Unlock()
				arm()
			}
		case <-timer:
			flush()
		}
	}
}

// note records one event; a new directory is watched with what is in it.
func (w *Watcher) note(ev fsnotify.Event) {
	if ev.Op == fsnotify.Chmod {
		return
	}
	var isDir bool
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			isDir = true
		}
	}
	if w.ignored(ev.Name, isDir) {
		return
	}
	found := map[string]bool{ev.Name: true}
	if isDir {
		if root := w.rootOf(ev.Name); root != "" {
			w.addTree(root, ev.Name, found)
		}
	}
	w.mu.Lock()
	for p := range found {
		w.pending[p] = true
	}
	w.mu.Unlock()
}

func (w *Watcher) rootOf(p string) string {
	for _, r := range w.roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return r
		}
	}
	return ""
}
