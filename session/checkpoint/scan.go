package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/tools"
)

// A command can change any file of the workspace, and which ones is not
// known until it has run. So the workspace is scanned before and after
// each command (and around each task call, whose subagent's edits and
// commands are the call's changes), and the difference is recorded with
// the call's result (ToolResult.Changed), for a rewind to put back. A
// file's content before is only known if it was kept before: the scan
// keeps every file's content in the session's snapshot (checkpoints/
// SESSION/snapshot, one copy per content), and reads again only files
// whose stamp (size, times, inode, mode) moved since the last scan. What
// a command changed moves into the checkpoints; the snapshot itself is a
// cache, removed when the session closes.
//
// The scan walks what glob and grep walk (no .git, nothing .gitignore
// ignores, no hidden paths, no symbolic links) and reads as they read
// (regular files only, never one with other hard links).
//
// A scan is bounded by files, directories and time. A session whose scan
// passes a bound stops scanning for the rest of its life in this process
// (a session/load while it is live gives the same Session back, still not
// scanning; closed and opened again, or in a new process, it scans): the
// bound is paid once, not before every command, and the user is told
// once. The commands that follow record why they were not scanned
// (ToolResult.Unscanned), and a rewind over them says so.

const (
	// DefaultScanFiles bounds a scan (ScanOptions.Files): a larger
	// workspace's commands are not checkpointed (and the user is told
	// once).
	DefaultScanFiles = 20000
	// DefaultScanDirs bounds the directories a scan goes into
	// (ScanOptions.Dirs): a tree of countless empty directories holds
	// no file to count, yet every scan would walk it (300,000 cost every
	// command 5 to 23 s). A workspace under the file bound rarely has a
	// tenth as many.
	DefaultScanDirs = 10000
	// MaxFile bounds one file's kept content.
	MaxFile = 8 << 20
	// ClockSlack is how much older than the scan a file's birth or change
	// time may read and the file still be the call's: those times come
	// from the kernel's coarse clock, which may lag time.Now by a tick.
	ClockSlack = 20 * time.Millisecond
	// scanTimeout bounds one scan: a slow disk, or a first scan reading
	// many large files, takes time the counts do not see.
	scanTimeout = 30 * time.Second
)

// ScanOptions bound the scans around a session's calls (0: the
// defaults).
type ScanOptions struct {
	Files, Dirs int
}

// Scanner scans a session's workspace around its calls. Its state is
// what the last scan found, per absolute path.
type Scanner struct {
	root  *confine.Root
	store *Store
	limit ScanOptions

	mu     sync.Mutex
	files  map[string]snapFile
	bytes  int64 // kept in the snapshot directory
	ready  bool  // the directory was cleared of an earlier process's copies
	told   bool
	active int // scans whose before-map is still in use: nothing is dropped meanwhile
	// stale says copies may be held by no file any more (dropUnused).
	stale bool
	// off says why this session scans no more: a scan passed a bound.
	off string
}

type snapFile struct {
	stamp confine.Stamp
	// hash is the content's, "" when it could not be read (why says so).
	hash string
	kept bool
	why  string
}

// Scanner returns the scanner of the workspace root, which keeps what
// the calls it scans changed among s.
func (s *Store) Scanner(root *confine.Root, limit ScanOptions) *Scanner {
	limit.Files = cmp.Or(limit.Files, DefaultScanFiles)
	limit.Dirs = cmp.Or(limit.Dirs, DefaultScanDirs)
	return &Scanner{root: root, store: s, limit: limit}
}

func (sn *Scanner) dir() string {
	dir := sn.store.Dir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "snapshot")
}

// Scan is one call's: the tree as it was before the call, and when the
// scan began.
type Scan struct {
	before map[string]snapFile
	start  time.Time
	// Unscanned says why the call is not scanned ("" when it is, or when
	// the call was cancelled meanwhile).
	Unscanned string
}

// Before scans the workspace ahead of a call, keeping what changed since
// the last scan. After must follow.
func (sn *Scanner) Before(ctx context.Context) *Scan {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	start := time.Now().Add(-ClockSlack)
	if sn.off != "" {
		return &Scan{start: start, Unscanned: sn.off} // a bound was passed: no walk again
	}
	ctx, cancel := context.WithTimeout(ctx, scanTimeout)
	defer cancel()
	if !sn.ready {
		sn.ready = true
		os.RemoveAll(sn.dir()) // copies a killed process left behind
	}
	if sn.files == nil {
		// Nothing known yet (or the last scan failed): count the files
		// first, so that a workspace past the bound costs a walk, not a
		// read of everything up to it on every command.
		if err := sn.eachFile(ctx, func(confine.Tree, confine.File, string) error { return nil }); err != nil {
			return &Scan{start: start, Unscanned: sn.turnOff(err)}
		}
	}
	files, err := sn.scan(ctx, sn.files)
	if err != nil {
		return &Scan{start: start, Unscanned: sn.turnOff(err)}
	}
	sn.files = files
	sn.active++
	return &Scan{before: files, start: start}
}

// After scans again after a call and returns what it changed, and why
// the scan failed if it did (what the call changed may then be more than
// it found).
func (sn *Scanner) After(ctx context.Context, sc *Scan) ([]event.FileChange, string) {
	if sc.before == nil {
		return nil, sc.Unscanned
	}
	before, start := sc.before, sc.start
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.active--
	// Not cancelled with the call: what it did is recorded all the same.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scanTimeout)
	defer cancel()
	after, err := sn.scan(sctx, sn.files)
	if err != nil {
		// The call made the workspace too large to scan (or it failed):
		// what it did to the files known before is still found.
		changes := sn.changedSince(before)
		return changes, sn.turnOff(err)
	}
	sn.files = after
	var changes []event.FileChange
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			changes = append(changes, sn.changeOf(p, b, ""))
		case a.stamp.Same(b.stamp), a.hash != "" && a.hash == b.hash:
		default:
			changes = append(changes, sn.changeOf(p, b, hashOrNotKept(a)))
		}
	}
	for p, a := range after {
		if _, ok := before[p]; ok {
			continue
		}
		switch {
		case a.stamp.Birth != 0 && a.stamp.Birth >= start.UnixNano():
			// Born during the call: a rewind removes it.
			changes = append(changes, event.FileChange{Path: p, After: hashOrNotKept(a)})
		case a.stamp.Change >= start.UnixNano():
			// There but unseen before (ignored until .gitignore changed),
			// or of unknown birth, and written during the call: what it
			// held before is not known, so a rewind must not remove it.
			changes = append(changes, event.FileChange{Path: p, Before: event.NotKept, After: hashOrNotKept(a),
				Why: "it was not among the files scanned before the command (ignored then, or of unknown birth)"})
		}
	}
	slices.SortFunc(changes, func(a, b event.FileChange) int { return strings.Compare(a.Path, b.Path) })
	if len(changes) > 0 {
		sn.stale = true
	}
	if sn.active == 0 && sn.stale {
		sn.dropUnused()
	}
	return changes, ""
}

// changedSince finds what a call did to the files before knew, without a
// scan: each is looked at by its path. The caller holds sn.mu.
func (sn *Scanner) changedSince(before map[string]snapFile) []event.FileChange {
	var changes []event.FileChange
	for p, b := range before {
		fi, err := sn.root.Lstat(p)
		switch {
		case err != nil && (errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "does not exist")):
			changes = append(changes, sn.changeOf(p, b, ""))
			continue
		case err != nil:
			continue // cannot tell; not claimed
		}
		if st, ok := confine.StampOf(fi); ok && st.Same(b.stamp) {
			continue
		}
		after := event.NotKept
		if data, err := sn.root.ReadFile(p, MaxFile); err == nil {
			after = tools.Hash(data)
		}
		if after != b.hash {
			changes = append(changes, sn.changeOf(p, b, after))
		}
	}
	slices.SortFunc(changes, func(a, b event.FileChange) int { return strings.Compare(a.Path, b.Path) })
	return changes
}

func hashOrNotKept(f snapFile) string {
	if f.hash == "" {
		return event.NotKept
	}
	return f.hash
}

// changeOf is the change of a file the scan before knew as b to after
// ("" when gone). Its earlier content moves among the checkpoints, where
// a rewind finds it; when that cannot be, the change says why.
func (sn *Scanner) changeOf(p string, b snapFile, after string) event.FileChange {
	c := event.FileChange{Path: p, Before: b.hash, After: after, Mode: b.stamp.Mode}
	if !b.kept {
		c.Before, c.Why = event.NotKept, cmp.Or(b.why, "not read")
		return c
	}
	name, _ := BlobName(b.hash)
	data, err := os.ReadFile(filepath.Join(sn.dir(), name))
	if err == nil {
		_, err = sn.store.Keep(data)
	}
	if err != nil {
		sn.store.o.Logger.Warn("no checkpoint before a command", "session", sn.store.o.Session, "path", p, "err", err)
		c.Before, c.Why = event.NotKept, err.Error()
	}
	return c
}

// turnOff stops checkpointing commands after a failed scan: for the rest
// of the session when the scan passed a bound (files, directories,
// time), else until a scan succeeds again. It tells the user once and
// returns why, for the call's result ("" when the call was cancelled).
// The caller holds sn.mu.
func (sn *Scanner) turnOff(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w: scanning it took more than %v", errTooLarge, scanTimeout)
	}
	sn.files, sn.stale = nil, true
	if sn.active == 0 {
		sn.dropUnused()
	}
	if errors.Is(err, context.Canceled) {
		return ""
	}
	why := err.Error()
	switch {
	case errors.Is(err, errTooLarge):
		if sn.off == "" {
			sn.off, sn.told = why, true
			sn.store.o.Notice(fmt.Sprintf("files commands change are not checkpointed for the rest of this session (a rewind cannot put them back): %s. "+
				"bridle stops scanning this workspace around commands; add what makes it large to .gitignore, then open the session again in a new bridle, or after closing it (session/close), to have them checkpointed.", why))
		}
	case !sn.told:
		sn.told = true
		sn.store.o.Notice(fmt.Sprintf("files commands change are not checkpointed (a rewind cannot put them back): %s", why))
	}
	return why
}

// scan walks every directory of the workspace; a file whose stamp has not
// moved since prev is not read again. The caller holds sn.mu.
func (sn *Scanner) scan(ctx context.Context, prev map[string]snapFile) (map[string]snapFile, error) {
	dir := sn.dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot keep files in %s: %w", dir, err)
	}
	out := make(map[string]snapFile, len(prev))
	found := 0 // of prev's files
	err := sn.eachFile(ctx, func(tree confine.Tree, f confine.File, p string) error {
		st, err := tree.Stat(f)
		if err != nil {
			return nil // gone since it was listed
		}
		old, had := prev[p]
		if had {
			found++
		}
		if had && old.stamp.Same(st) {
			out[p] = old
			return nil
		}
		if had {
			sn.stale = true // its earlier copy may be held by nothing now
		}
		out[p] = sn.keep(tree, f, st, dir)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found < len(prev) {
		sn.stale = true // files went
	}
	return out, nil
}

// eachFile calls fn with every file a scan sees, and its absolute path;
// past the scan's bounds (files, directories) it stops with an error
// saying so.
func (sn *Scanner) eachFile(ctx context.Context, fn func(tree confine.Tree, f confine.File, path string) error) error {
	limit, dirLimit := sn.limit.Files, sn.limit.Dirs
	n, dirs := 0, 0
	for _, top := range sn.root.Dirs() {
		if filepath.Dir(top) == top { // "/", or a Windows volume's root
			return fmt.Errorf("%w: it is the whole machine (%s)", errTooLarge, top)
		}
		tree, err := sn.root.OpenTree(top)
		if err != nil {
			return err
		}
		err = tree.WalkDirs(ctx, func(string) error {
			if dirs++; dirs > dirLimit {
				return fmt.Errorf("%w: more than %d directories outside .gitignore", errTooLarge, dirLimit)
			}
			return nil
		}, func(f confine.File) error {
			if n++; n > limit {
				return fmt.Errorf("%w: more than %d files outside .gitignore", errTooLarge, limit)
			}
			return fn(tree, f, top+string(filepath.Separator)+filepath.FromSlash(f.Rel))
		})
		tree.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// errTooLarge is a scan past one of its bounds: the session scans no more.
var errTooLarge = errors.New("the workspace is too large to scan around each command")

// keep reads one file and keeps its content in the snapshot.
func (sn *Scanner) keep(tree confine.Tree, f confine.File, st confine.Stamp, dir string) snapFile {
	out := snapFile{stamp: st}
	if sn.bytes+st.Size > sn.store.o.Bytes {
		// Not even read: a workspace of large files costs one stat each.
		out.why = fmt.Sprintf("the session's snapshot is full (%s)", sizeText(sn.store.o.Bytes))
		return out
	}
	data, err := tree.Read(f, MaxFile)
	switch {
	case errors.Is(err, confine.ErrTooLarge):
		out.why = fmt.Sprintf("larger than %d MiB", MaxFile>>20)
		return out
	case errors.Is(err, confine.ErrLinked):
		out.why = "it has other hard links"
		return out
	case err != nil:
		out.why = err.Error()
		return out
	}
	out.hash = tools.Hash(data)
	name, _ := BlobName(out.hash)
	created, err := StoreBlob(dir, name, data)
	if err != nil {
		out.why = err.Error()
		return out
	}
	if created {
		sn.bytes += int64(len(data))
	}
	out.kept = true
	return out
}

// dropUnused removes the snapshot's copies no file holds any more. The
// caller holds sn.mu.
func (sn *Scanner) dropUnused() {
	used := map[string]bool{}
	for _, f := range sn.files {
		if f.kept {
			name, _ := BlobName(f.hash)
			used[name] = true
		}
	}
	sn.stale = false
	dir := sn.dir()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if used[e.Name()] {
			continue
		}
		if fi, err := e.Info(); err == nil && os.Remove(filepath.Join(dir, e.Name())) == nil {
			sn.bytes -= fi.Size()
		}
	}
}

// Close removes the snapshot: it is a cache of the workspace for this
// process, not a record.
func (sn *Scanner) Close() {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.ready && sn.dir() != "" {
		os.RemoveAll(sn.dir())
	}
	sn.files, sn.bytes, sn.ready = nil, 0, false
}

// sizeText says n bytes for the user: megabytes, or bytes under one.
func sizeText(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d MB", n>>20)
}
