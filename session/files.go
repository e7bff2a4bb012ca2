package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/pathcmp"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
	"github.com/bridle-dev/bridle/workspace"
)

// files is what a session knows of its workspace's files: the watcher, the
// cache of tool outputs it invalidates, and the files whose content the
// model has seen, so that a change on disk can be noted.
type files struct {
	// w is the workspace's watcher, shared with the other sessions on it
	// (space); nil when there is none. unsubscribe stops its batches
	// reaching onChange.
	w           *workspace.Watcher
	unsubscribe func()
	cache       *workspace.Cache[tools.Result]

	mu sync.Mutex
	// changed holds what the watcher reported since the last check;
	// checkAll says every known file must be looked at (at start, after
	// an event overflow, or without a trustworthy watcher).
	changed  []string
	checkAll bool
	known    map[string]*seenFile
}

type seenFile struct {
	version string
	turn    int
	shown   string
}

// readyWait is how long the first use of a session's files waits for the
// workspace's watcher to have added every directory.
const readyWait = 250 * time.Millisecond

// openFiles has the session hear of the changes the workspace's watcher
// reports and rebuilds from the log what the model has seen.
func (s *Session) openFiles() *files {
	f := unwatched()
	f.checkAll = true
	s.space.Start()
	if w := s.space.Watcher(); w != nil {
		f.w = w
		f.unsubscribe = s.space.Subscribe(f.onChange)
		// A usual tree is added in a few milliseconds (the watcher has
		// most likely started already): wait for it, so the first tool
		// calls are cached; a huge one goes on in the background.
		w.WaitReady(readyWait)
	}
	f.known = s.seenIn(context.Background(), s.view())
	return f
}

// seenIn rebuilds from a log what the model has seen: each file's version
// and the prompt it was seen at.
func (s *Session) seenIn(ctx context.Context, events []event.Event) map[string]*seenFile {
	stored := s.storedSeen(ctx, events)
	known := map[string]*seenFile{}
	turn := 0 // as promptNumber counts
	for _, e := range events {
		if e.Kind().Facts().OpensTurn {
			turn++
		}
		var seen []event.FileSeen
		switch v := e.Payload.(type) {
		case event.ToolResult:
			seen = v.Seen
		case *event.Stub:
			seen = stored[e.Seq]
		case event.FileChanged:
			if k := known[v.Path]; k != nil {
				k.version = v.Version
			}
		}
		for _, f := range seen {
			known[f.Path] = &seenFile{version: f.Version, turn: turn, shown: s.root.Show(f.Path)}
		}
	}
	return known
}

// storedSeen reads what the results the log holds as stubs saw, by seq,
// from the store: once per session, when its files are first looked at
// (and after a rewind). Only that member of each result is read, not its
// output. Should the store fail, those files are not known (no note will
// say they changed), and the log says so.
func (s *Session) storedSeen(ctx context.Context, events []event.Event) map[int64][]event.FileSeen {
	first, last := int64(-1), int64(-1)
	for _, e := range events {
		if st, ok := e.Payload.(*event.Stub); ok && st.Of == event.KindToolResult {
			if first < 0 {
				first = e.Seq
			}
			last = e.Seq
		}
	}
	if first < 0 {
		return nil
	}
	out := map[int64][]event.FileSeen{}
	r := store.Range{After: first - 1, Through: last, Kinds: []string{string(event.KindToolResult)}, From: event.SeenKey}
	err := s.eachStored(ctx, r, func(r store.Record) error {
		seen, err := event.SeenOf(r.Payload)
		if err != nil {
			return fmt.Errorf("event %d: %w", r.Seq, err)
		}
		if len(seen) > 0 {
			out[r.Seq] = seen
		}
		return nil
	})
	if err != nil {
		s.m.log.Warn("the files the model read before the window's start are not known: no note will say they changed", "session", s.row.ID, "err", err)
	}
	return out
}

// rewound makes what the model has seen what the log after a rewind
// shows: the files it saw in the rewound prompts are forgotten, and the
// files put back count as seen as they are now (they are as the model
// last saw them before), so no note says they changed.
func (f *files) rewound(known map[string]*seenFile, restored []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range restored {
		if k := known[p]; k != nil {
			k.version = workspace.FileVersion(p)
		}
	}
	f.known = known
	f.cache.DropTrees()
}

// cacheBytes bounds the tool-output cache of a session: enough for the
// files of a large task, not a copy of every file a long session read.
const cacheBytes = 32 << 20

// unwatched is files without a watcher: every known file is looked at,
// and no listing or search is cached.
func unwatched() *files {
	f := &files{known: map[string]*seenFile{}}
	f.cache = workspace.NewCache[tools.Result](f.sees)
	f.cache.Bound(cacheBytes, func(r tools.Result) int { return len(r.Output) })
	return f
}

// trusted reports whether every change under the roots is reported.
func (f *files) trusted() bool { return f.w != nil && f.w.Trustworthy() }

// sees reports whether every change under dir has been reported.
func (f *files) sees(dir string) bool { return f.w != nil && f.w.Sees(dir) }

func (f *files) onChange(paths []string) {
	f.cache.Invalidate(paths)
	f.mu.Lock()
	defer f.mu.Unlock()
	if paths == nil {
		f.checkAll = true
		return
	}
	f.changed = append(f.changed, paths...)
}

func (f *files) close() {
	if f != nil && f.unsubscribe != nil {
		f.unsubscribe()
	}
}

// files returns the session's files, started on first use; a child uses
// its parent's cache.
func (s *Session) files() *files {
	if s.parent != nil {
		return s.parent.files()
	}
	s.filesOnce.Do(func() {
		f := s.openFiles()
		s.mu.Lock()
		s.fs = f
		s.mu.Unlock()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fs
}

// cacheStep serves a cacheable call (tools.Call.Cacheable) from the
// session's cache when what it depends on (tools.Call.Deps) has not
// changed, and keeps what it ran for the next; it notes the files the
// model now knows (callRun.seen). A child uses its parent's cache.
func cacheStep(x *callRun, next func() error) error {
	f := x.t.s.files()
	ctx, call := x.ctx, x.call
	if !call.Cacheable {
		err := next()
		if call.Effect >= permission.EffectEdit {
			// A listing or a search may be stale before the watcher says so.
			f.cache.DropTrees()
		}
		if call.Plan != nil && !x.res.IsError {
			x.seen = append(x.seen, event.FileSeen{Path: call.Plan.Path, Version: workspace.FileVersion(call.Plan.Path)})
		}
		return err
	}
	var seen []event.FileSeen
	for _, d := range call.Deps {
		if !d.Tree {
			seen = append(seen, event.FileSeen{Path: d.Path, Version: workspace.FileVersion(d.Path)})
		}
	}
	if call.Volatile {
		err := next()
		if !x.res.IsError && ctx.Err() == nil {
			x.seen = seen
		}
		return err
	}
	key := cacheKey(call.Name, call.Input)
	if res, ok := f.cache.Get(key); ok {
		x.res, x.seen, x.cached = res, seen, true
		return nil
	}
	since := time.Now()
	if err := next(); err != nil {
		return err
	}
	if x.res.IsError || ctx.Err() != nil {
		return nil
	}
	f.cache.Put(key, x.res, call.Deps, since)
	x.seen = seen
	return nil
}

func cacheKey(tool string, input json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, input) != nil {
		return tool + "\x00" + string(input)
	}
	return tool + "\x00" + b.String()
}

// saw records the files the model now knows, read or written in turn.
func (f *files) saw(seen []event.FileSeen, turn int, show func(string) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range seen {
		f.known[s.Path] = &seenFile{version: s.Version, turn: turn, shown: show(s.Path)}
	}
}

// check returns a file_changed event for each file the model has seen
// that is no longer as it saw it. Without a trustworthy watcher every
// known file is looked at; with one, those under what it reported.
func (f *files) check() []event.FileChanged {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Looking at a few hundred files costs less than a millisecond, and
	// sees an edit the watcher has not delivered yet (it debounces).
	all := f.checkAll || !f.trusted() || len(f.known) <= statAll
	changed := f.changed
	f.changed, f.checkAll = nil, false
	var out []event.FileChanged
	for _, path := range slices.Sorted(maps.Keys(f.known)) {
		k := f.known[path]
		if !all && !touched(path, changed) {
			continue
		}
		v := workspace.FileVersion(path)
		if v == k.version {
			continue
		}
		k.version = v
		out = append(out, event.FileChanged{Path: path, Shown: k.shown, Turn: k.turn, Version: v})
	}
	return out
}

// statAll is how many known files are looked at on every check; past it,
// only those under what the watcher reported.
const statAll = 2000

func touched(path string, changed []string) bool {
	for _, c := range changed {
		if pathcmp.Inside(path, c) {
			return true
		}
	}
	return false
}
