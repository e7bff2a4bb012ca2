package workspace

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bridle-dev/bridle/internal/pidalive"
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
	// Pick and Found keep a list of some files current (the .env files
	// of a workspace): Found is told the path of each file whose name
	// Pick accepts when a walk finds it (when watching starts, in a new
	// directory, after an overflow or a changed .gitignore) and when an
	// event names it (created, written, removed, renamed), at once, not
	// after the debounce; and the path of each watched directory removed
	// or renamed, below which such files may be gone. Found runs on the
	// watcher's goroutines, and must be quick and safe for concurrent use.
	Pick   func(name string) bool
	Found  func(path string)
	Logger *slog.Logger
}

// Watcher reports changes under a session's directories. It does not
// watch inside .git, node_modules and the directories .gitignore files
// ignore; a change to any entry of a watched directory is reported,
// ignored files included (a listing shows them). When the OS will not
// watch every directory, it says so once (Degraded) and users of it check
// modification times instead.
type Watcher struct {
	opts  WatchOptions
	roots []string
	fsw   *fsnotify.Watcher

	mu sync.Mutex
	// ignores holds, for each watched directory, the rules that apply in
	// it and the root it is under.
	ignores map[string]dirRules
	// blind holds the directories skipped although .gitignore does not
	// ignore them (node_modules): a search may look inside them, and no
	// change there would be seen.
	blind    map[string]bool
	degraded string
	// ready is closed when the first scan is done.
	ready chan struct{}
	// scanning counts rescans running (after an overflow or a changed
	// .gitignore): until they end, a change may go unseen.
	scanning int
	pending  map[string]bool
	overflow bool

	// Sync's barrier: syncDir (made on first use, 0700) is watched with
	// the workspace; asked counts the files Sync wrote there, noted the
	// highest whose event was read; barriers names the files not yet
	// noted (a number and a random part, so no other program can pass
	// one off); progress is closed (and replaced) whenever noted or
	// scanning moves.
	syncDir  string
	syncErr  error
	asked    uint64
	noted    uint64
	barriers map[string]uint64
	progress chan struct{}

	done chan struct{}
	wg   sync.WaitGroup
}

type dirRules struct {
	root string
	ig   *Ignore
}

// Watch starts watching roots (absolute directories). The directories are
// added in the background, without waiting for them: Ready says when all
// are, and a caller that wants them first uses WaitReady.
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
	w := &Watcher{opts: opts, roots: roots, fsw: fsw, ignores: map[string]dirRules{}, blind: map[string]bool{},
		pending: map[string]bool{}, ready: make(chan struct{}), barriers: map[string]uint64{}, progress: make(chan struct{}), done: make(chan struct{})}
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		w.scan()
		close(w.ready)
	}()
	go w.loop()
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
	w.mu.Lock()
	dir := w.syncDir
	w.mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	return err
}

// ErrClosed is what Sync returns once the watcher is closed.
var ErrClosed = errors.New("the file watcher is closed")

// Sync returns once every change made before it was called has been
// noted (Found told of it, the batch pending): the first walk is done,
// every event the OS queued before the call has been read, and no rescan
// is running. It writes a file in a directory of its own (made on first
// use, removed by Close), which the watcher watches too, and waits for
// its event: the OS reports one watcher's events in the order they
// happened. It costs a file's creation and an event's round trip.
func (w *Watcher) Sync(ctx context.Context) error {
	if w.closed() {
		return ErrClosed
	}
	select {
	case <-w.ready:
	case <-w.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	dir, err := w.barrierDir()
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.asked++
	n := w.asked
	name := filepath.Join(dir, strconv.FormatUint(n, 10)+"-"+rand.Text())
	w.barriers[name] = n
	w.mu.Unlock()
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		w.mu.Lock()
		delete(w.barriers, name)
		w.mu.Unlock()
		if w.closed() {
			return ErrClosed
		}
		return fmt.Errorf("sync the file watcher: %w", err)
	}
	os.Remove(name)
	for {
		w.mu.Lock()
		synced := w.noted >= n && w.scanning == 0
		progress := w.progress
		w.mu.Unlock()
		if synced {
			return nil
		}
		select {
		case <-progress:
		case <-w.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// barrierDir makes and watches Sync's directory, once.
func (w *Watcher) barrierDir() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.syncDir != "" || w.syncErr != nil {
		return w.syncDir, w.syncErr
	}
	if w.closed() {
		return "", ErrClosed // Close removes only the directory it sees
	}
	removeStaleBarriers()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", barrierPrefix, os.Getpid()))
	if err == nil {
		if err = w.fsw.Add(dir); err != nil {
			os.Remove(dir)
		}
	}
	if err != nil {
		w.syncErr = fmt.Errorf("sync the file watcher: %w", err)
		return "", w.syncErr
	}
	w.syncDir = dir
	return dir, nil
}

// barrierPrefix starts the names of Sync's directories, followed by the
// process id and a random part.
const barrierPrefix = "bridle-watch-"

// removeStaleBarriers removes the Sync directories of processes that are
// gone: a bridle killed (a crash, SIGKILL) leaves its own behind.
func removeStaleBarriers() {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), barrierPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, _, ok := strings.Cut(rest, "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n == os.Getpid() {
			continue
		}
		if pidalive.Exists(n) {
			continue // alive
		}
		os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
	}
}

// moved wakes the Syncs waiting; w.mu is held.
func (w *Watcher) moved() {
	close(w.progress)
	w.progress = make(chan struct{})
}

func (w *Watcher) closed() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// Ready reports whether every directory has been added: until then a
// change in a directory not yet watched goes unseen.
func (w *Watcher) Ready() bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

// WaitReady waits up to timeout for every directory to be added and says
// whether they were.
func (w *Watcher) WaitReady(timeout time.Duration) bool {
	select {
	case <-w.ready:
		return true
	case <-time.After(timeout):
		return false
	}
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

// Trustworthy reports whether a change anywhere under the roots that are
// watched would be seen: the watcher is ready, not degraded and not
// rescanning.
func (w *Watcher) Trustworthy() bool {
	if !w.Ready() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.degraded == "" && w.scanning == 0
}

// Sees reports whether every change under dir has been reported: dir is
// watched, nothing under it is left unwatched for a search to find, the
// watcher is trustworthy, and no change is waiting in the debounce.
func (w *Watcher) Sees(dir string) bool {
	if !w.Ready() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.degraded != "" || w.scanning > 0 || len(w.pending) > 0 || w.overflow {
		return false
	}
	if _, ok := w.ignores[dir]; !ok {
		return false
	}
	for b := range w.blind {
		if b == dir || Within(b, dir) {
			return false
		}
	}
	return true
}

// skipDir names the directories never watched, whatever .gitignore says.
func skipDir(name string) bool { return name == ".git" || name == "node_modules" }

// scan adds every root. Run again (after an overflow, or when a
// .gitignore changed) it adds what is missing and refreshes the rules.
func (w *Watcher) scan() {
	for _, r := range w.roots {
		w.addTree(r, r, nil)
	}
}

// rescan scans again in the background; the watcher is not trustworthy
// until it is done.
func (w *Watcher) rescan() {
	w.mu.Lock()
	w.scanning++
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.scan()
		w.mu.Lock()
		w.scanning--
		w.moved()
		w.mu.Unlock()
	}()
}

// addTree watches dir and every directory below it that is not skipped.
// With found set, the files already in them are reported as changed: they
// were created before the watch could see them. The .gitignore files on
// the way are read through one os.Root at root, opened for the walk.
func (w *Watcher) addTree(root, dir string, found map[string]bool) {
	top, err := os.OpenRoot(root)
	if err != nil {
		top = nil // gone, or not a directory: the walk finds nothing either
	} else {
		defer top.Close()
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || w.closed() {
			return nil
		}
		if !d.IsDir() {
			if found != nil {
				found[p] = true
			}
			w.pick(p)
			return nil
		}
		if p != dir {
			if skip, blind := w.skipped(p); skip {
				if blind {
					w.mu.Lock()
					w.blind[p] = true
					w.mu.Unlock()
				}
				return filepath.SkipDir
			}
		}
		if !w.add(root, p, w.rulesFor(top, root, p)) {
			return filepath.SkipAll
		}
		return nil
	})
}

// skipped reports whether the directory p is not watched, and whether it
// is a blind spot: skipped by name although .gitignore does not ignore it.
func (w *Watcher) skipped(p string) (skip, blind bool) {
	w.mu.Lock()
	r, ok := w.ignores[filepath.Dir(p)]
	w.mu.Unlock()
	ignored := ok && r.ig.Match(relSlash(r.root, p), true)
	if ignored {
		return true, false
	}
	name := filepath.Base(p)
	if skipDir(name) {
		// The walks of glob and grep skip .git themselves.
		return true, name != ".git"
	}
	return false, false
}

// rulesFor returns the .gitignore rules that apply inside dir. The
// files are read through top, an os.Root at root (nil when root could not
// be opened: no rules): a .gitignore that is a link leading out of the
// workspace is not followed, and one that is a named pipe, even renamed
// over the file as it is read, is refused without waiting
// (ReadRegularIn): a watcher stuck on it would hang Close, and with it
// the session's close and bridle's shutdown.
func (w *Watcher) rulesFor(top *os.Root, root, dir string) *Ignore {
	w.mu.Lock()
	parent, ok := w.ignores[filepath.Dir(dir)]
	w.mu.Unlock()
	if top == nil {
		return parent.ig
	}
	if !ok || dir == root {
		return Load(top, relSlash(root, dir))
	}
	if data, err := ReadRegularIn(top, path.Join(relSlash(root, dir), ".gitignore")); err == nil {
		return parent.ig.With(relSlash(root, dir), data)
	}
	return parent.ig
}

// add watches one directory; it returns false once the watcher is
// degraded or closed.
func (w *Watcher) add(root, dir string, ig *Ignore) bool {
	w.mu.Lock()
	if w.degraded != "" {
		w.mu.Unlock()
		return false
	}
	_, had := w.ignores[dir]
	n := len(w.ignores)
	w.mu.Unlock()
	var err error
	if w.opts.Limit > 0 && n >= w.opts.Limit && !had {
		err = fmt.Errorf("the watcher's limit of %d directories was reached", w.opts.Limit)
	} else if err = w.fsw.Add(dir); err == nil {
		w.mu.Lock()
		w.ignores[dir] = dirRules{root: root, ig: ig}
		delete(w.blind, dir)
		w.mu.Unlock()
		return true
	}
	switch {
	case w.closed() || errors.Is(err, fsnotify.ErrClosed):
		return false
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, os.ErrPermission):
		return true // gone meanwhile, or not this user's to read
	case errors.Is(err, syscall.ENOSPC):
		err = fmt.Errorf("the OS limit on file watches (fs.inotify.max_user_watches) was reached")
	}
	w.mu.Lock()
	w.degraded = fmt.Sprintf("%v after %d directories; changes elsewhere are found by checking modification times when an output is used (raise the limit with sysctl fs.inotify.max_user_watches=524288)", err, n)
	reason := w.degraded
	w.mu.Unlock()
	w.opts.Logger.Warn("the workspace is not fully watched", "reason", reason)
	if w.opts.OnDegraded != nil {
		w.opts.OnDegraded(reason)
	}
	return false
}

// forget drops the watches on dir and below, which was removed or renamed:
// the kernel's watches follow a renamed directory, so under its new name
// they are added afresh. A file's removal costs a map lookup.
func (w *Watcher) forget(dir string) {
	w.mu.Lock()
	_, watched := w.ignores[dir]
	if !watched && !w.blind[dir] {
		w.mu.Unlock()
		return
	}
	var gone []string
	for d := range w.ignores {
		if d == dir || Within(d, dir) {
			gone = append(gone, d)
			delete(w.ignores, d)
		}
	}
	for b := range w.blind {
		if b == dir || Within(b, dir) {
			delete(w.blind, b)
		}
	}
	w.mu.Unlock()
	for _, d := range gone {
		w.fsw.Remove(d)
	}
	if watched && w.opts.Found != nil {
		w.opts.Found(dir)
	}
}

// pick tells Found of the file p, if Pick wants it.
func (w *Watcher) pick(p string) {
	if w.opts.Pick != nil && w.opts.Pick(filepath.Base(p)) {
		w.opts.Found(p)
	}
}

func relSlash(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
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
				// Directories created meanwhile may be unwatched: look again.
				w.mu.Lock()
				w.overflow = true
				w.mu.Unlock()
				w.rescan()
				// Sync's own events may be lost with the rest: the rescan,
				// which started after them, stands in for them.
				w.mu.Lock()
				w.noted = w.asked
				clear(w.barriers)
				w.moved()
				w.mu.Unlock()
				arm()
			}
		case <-timer:
			flush()
		}
	}
}

// note records one event. A new directory is watched with what is in it;
// a removed or renamed one is forgotten; a changed .gitignore changes what
// is watched.
func (w *Watcher) note(ev fsnotify.Event) {
	if w.barrier(ev.Name) {
		return
	}
	if ev.Op == fsnotify.Chmod {
		return
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.forget(ev.Name)
	}
	found := map[string]bool{ev.Name: true}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			if skip, blind := w.skipped(ev.Name); !skip {
				if root := w.rootOf(ev.Name); root != "" {
					w.addTree(root, ev.Name, found)
				}
			} else if blind {
				w.mu.Lock()
				w.blind[ev.Name] = true
				w.mu.Unlock()
			}
		}
	}
	w.mu.Lock()
	for p := range found {
		w.pending[p] = true
	}
	w.mu.Unlock()
	w.pick(ev.Name)
	if filepath.Base(ev.Name) == ".gitignore" {
		w.rescan()
	}
}

// barrier reports whether p is one of Sync's files, and notes it.
func (w *Watcher) barrier(p string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.syncDir == "" || filepath.Dir(p) != w.syncDir {
		return false
	}
	if n, ok := w.barriers[p]; ok {
		delete(w.barriers, p)
		if n > w.noted {
			w.noted = n
			w.moved()
		}
	}
	return true
}

func (w *Watcher) rootOf(p string) string {
	for _, r := range w.roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return r
		}
	}
	return ""
}
