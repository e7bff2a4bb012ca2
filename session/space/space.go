// Package space keeps what the sessions on one workspace (the same
// directories) share in a process: one file watcher, and the list of the
// .env files below the directories (redact.DotEnvs), which the watcher's
// walk fills and its events keep current.
//
// Opening a space never walks the tree: the watcher starts at the first
// Start, and its walk goes on in the background. A space stops a grace
// after its last holder gives it back: a session opened again meanwhile
// (the editor retrying a load, a session closed and reopened) finds the
// walk done or under way, not started over.
package space

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/workspace"
)

// Space is the watcher and the .env list of one workspace, shared by the
// sessions on it.
type Space struct {
	key  string
	dirs []string
	// refs and idle are guarded by the Registry's mu; idle stops the space
	// once no one has had it for the grace.
	refs int
	idle *time.Timer
	envs *redact.DotEnvs
	// problem and changed are the Registry's Problem and Changed.
	problem func(reason string)
	changed func(dirs, paths []string)

	started sync.Once

	mu sync.Mutex
	// w is set by Start; nil when the workspace is not watched (the whole
	// file system, or the OS gave no watcher): envs then walks the tree
	// itself. Also nil before Start.
	w *workspace.Watcher
	// subs receive the watcher's batches, by id.
	subs map[int]func(paths []string)
	next int
}

// Grace is how long a space outlives its last holder, unless the
// Registry says otherwise.
const Grace = 5 * time.Second

// Registry holds the open spaces, by their directories. Its zero value is
// ready to use; its fields are set before the first Open.
type Registry struct {
	// Grace, if set, replaces Grace (tests).
	Grace time.Duration
	// Problem, if set, is told why a space's directories are not watched,
	// or not all of them (the watcher then falls back to checking
	// modification times).
	Problem func(reason string)
	// Stopped, if set, is called when a space stopped at the end of its
	// grace.
	Stopped func()
	// Changed, if set, is told each batch of a space's watcher once,
	// with the space's directories (the language servers hear of
	// changes on disk through it).
	Changed func(dirs, paths []string)

	mu sync.Mutex
	by map[string]*Space
	// shut says Shutdown was called: a space stops with its last holder,
	// without grace.
	shut bool
}

// Open returns the space of dirs, made if no one has it open; Close gives
// it back. The space's watcher does not start until Start.
func (r *Registry) Open(dirs []string) *Space {
	key := strings.Join(dirs, "\x00")
	r.mu.Lock()
	defer r.mu.Unlock()
	if sp := r.by[key]; sp != nil {
		sp.refs++
		if sp.idle != nil {
			// Should it have fired already, it finds refs > 0 and
			// leaves the space be.
			sp.idle.Stop()
			sp.idle = nil
		}
		return sp
	}
	sp := &Space{key: key, dirs: dirs, refs: 1, envs: redact.NewDotEnvs(dirs), problem: r.Problem, changed: r.Changed, subs: map[int]func([]string){}}
	if r.by == nil {
		r.by = map[string]*Space{}
	}
	r.by[key] = sp
	return sp
}

// Close gives back a space Open returned. The last holder's Close stops it
// once the grace is over, or at once after Shutdown.
func (r *Registry) Close(sp *Space) {
	r.mu.Lock()
	sp.refs--
	if sp.refs > 0 {
		r.mu.Unlock()
		return
	}
	if r.shut {
		delete(r.by, sp.key)
		r.mu.Unlock()
		sp.stop()
		return
	}
	sp.idle = time.AfterFunc(cmp.Or(r.Grace, Grace), func() {
		r.mu.Lock()
		if sp.refs > 0 || r.by[sp.key] != sp {
			r.mu.Unlock()
			return // opened again meanwhile, or stopped by Shutdown
		}
		delete(r.by, sp.key)
		r.mu.Unlock()
		sp.stop()
		if r.Stopped != nil {
			r.Stopped()
		}
	})
	r.mu.Unlock()
}

// Shutdown stops, at once, the spaces no one has; the others stop with
// their last holder's Close, without grace.
func (r *Registry) Shutdown() {
	r.mu.Lock()
	r.shut = true
	var idle []*Space
	for key, sp := range r.by {
		if sp.refs == 0 {
			if sp.idle != nil {
				sp.idle.Stop()
			}
			delete(r.by, key)
			idle = append(idle, sp)
		}
	}
	r.mu.Unlock()
	for _, sp := range idle {
		sp.stop()
	}
}

// stop stops the space's watcher, and any from starting.
func (sp *Space) stop() {
	sp.started.Do(func() {})
	if w := sp.Watcher(); w != nil {
		w.Close()
	}
}

// DotEnvs is the list of the .env files below the space's directories.
func (sp *Space) DotEnvs() *redact.DotEnvs { return sp.envs }

// Watcher returns the space's watcher: nil before Start, or when the
// workspace is not watched.
func (sp *Space) Watcher() *workspace.Watcher {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.w
}

// Start starts watching the space's directories, once; it does not wait
// for the walk. A stopped space does not start.
func (sp *Space) Start() {
	sp.started.Do(func() {
		if slices.Contains(sp.dirs, string(filepath.Separator)) {
			// A session at / would watch every directory of the machine,
			// /proc and /sys included, and take the user's whole inotify
			// allowance from every other program.
			sp.tell("the workspace is the whole file system (/), which is not watched")
			return
		}
		w, err := workspace.Watch(sp.dirs, workspace.WatchOptions{
			OnChange: sp.onChange, OnDegraded: sp.tell, Pick: redact.DotEnvName, Found: sp.envs.Found,
		})
		if err != nil {
			sp.tell(err.Error())
			return
		}
		sp.mu.Lock()
		sp.w = w
		sp.mu.Unlock()
		sp.envs.Watch(w)
	})
}

func (sp *Space) tell(reason string) {
	if sp.problem != nil {
		sp.problem(reason)
	}
}

// Subscribe has fn receive the watcher's batches (the paths changed; nil
// when anything may have changed) until the returned function is called.
func (sp *Space) Subscribe(fn func(paths []string)) (unsubscribe func()) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	id := sp.next
	sp.next++
	sp.subs[id] = fn
	return func() {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		delete(sp.subs, id)
	}
}

func (sp *Space) onChange(paths []string) {
	sp.mu.Lock()
	subs := make([]func([]string), 0, len(sp.subs))
	for _, fn := range sp.subs {
		subs = append(subs, fn)
	}
	sp.mu.Unlock()
	for _, fn := range subs {
		fn(paths)
	}
	if sp.changed != nil {
		sp.changed(sp.dirs, paths)
	}
}
