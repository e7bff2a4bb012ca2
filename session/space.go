package session

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

// space is what the sessions on one workspace (the same directories)
// share in this process: one file watcher, and the list of the .env files
// below the directories (redact.DotEnvs), which the watcher's walk fills
// and its events keep current. Session start never walks the tree: the
// watcher starts once the editor has the first session (Ready), or at the
// session's first use of it, whichever comes first, and its walk goes on
// in the background. It stops spaceGrace after the last session closes:
// a session opened again meanwhile (the editor retrying a load, a session
// closed and reopened) finds the walk done or under way, not started over.
type space struct {
	key  string
	dirs []string
	// refs and idle are guarded by the Manager's spaces.mu; idle stops the
	// space once no session has had it for spaceGrace.
	refs int
	idle *time.Timer
	envs *redact.DotEnvs

	started sync.Once

	mu sync.Mutex
	// w is set by start; nil when the workspace is not watched (the whole
	// file system, or the OS gave no watcher): envs then walks the tree
	// itself. Also nil before start.
	w *workspace.Watcher
	// subs receive the watcher's batches (files.onChange), by id.
	subs map[int]func(paths []string)
	next int
}

// spaceGrace is how long a space outlives its last session.
const spaceGrace = 5 * time.Second

// spaces are the Manager's open spaces, by their directories.
type spaces struct {
	mu sync.Mutex
	by map[string]*space
	// shut says the Manager shut down: a space stops with its last
	// session, without grace.
	shut bool
}

// openSpace returns the space of dirs, started if no session has it open;
// closeSpace gives it back.
func (m *Manager) openSpace(dirs []string) *space {
	key := strings.Join(dirs, "\x00")
	m.spaces.mu.Lock()
	defer m.spaces.mu.Unlock()
	if sp := m.spaces.by[key]; sp != nil {
		sp.refs++
		if sp.idle != nil {
			// Should it have fired already, it finds refs > 0 and
			// leaves the space be.
			sp.idle.Stop()
			sp.idle = nil
		}
		return sp
	}
	sp := &space{key: key, dirs: dirs, refs: 1, envs: redact.NewDotEnvs(dirs), subs: map[int]func([]string){}}
	if m.spaces.by == nil {
		m.spaces.by = map[string]*space{}
	}
	m.spaces.by[key] = sp
	return sp
}

func (m *Manager) closeSpace(sp *space) {
	m.spaces.mu.Lock()
	sp.refs--
	if sp.refs > 0 {
		m.spaces.mu.Unlock()
		return
	}
	if m.spaces.shut {
		delete(m.spaces.by, sp.key)
		m.spaces.mu.Unlock()
		sp.stop()
		return
	}
	sp.idle = time.AfterFunc(cmp.Or(m.spaceGrace, spaceGrace), func() {
		m.spaces.mu.Lock()
		if sp.refs > 0 || m.spaces.by[sp.key] != sp {
			m.spaces.mu.Unlock()
			return // opened again meanwhile, or stopped by Shutdown
		}
		delete(m.spaces.by, sp.key)
		m.spaces.mu.Unlock()
		sp.stop()
		m.hook("space stopped")
	})
	m.spaces.mu.Unlock()
}

// closeSpaces stops, at once, the spaces no session has (Shutdown); the
// others stop with their last session.
func (m *Manager) closeSpaces() {
	m.spaces.mu.Lock()
	m.spaces.shut = true
	var idle []*space
	for key, sp := range m.spaces.by {
		if sp.refs == 0 {
			if sp.idle != nil {
				sp.idle.Stop()
			}
			delete(m.spaces.by, key)
			idle = append(idle, sp)
		}
	}
	m.spaces.mu.Unlock()
	for _, sp := range idle {
		sp.stop()
	}
}

// stop stops the space's watcher, and any from starting.
func (sp *space) stop() {
	sp.started.Do(func() {})
	if w := sp.watcher(); w != nil {
		w.Close()
	}
}

// watcher returns the space's watcher: nil before it started, or when the
// workspace is not watched.
func (sp *space) watcher() *workspace.Watcher {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.w
}

// start starts watching the space's directories, once; it does not wait
// for the walk.
func (sp *space) start(m *Manager) {
	sp.started.Do(func() {
		if slices.Contains(sp.dirs, string(filepath.Separator)) {
			// A session at / would watch every directory of the machine,
			// /proc and /sys included, and take the user's whole inotify
			// allowance from every other program.
			m.watchProblem("the workspace is the whole file system (/), which is not watched")
			return
		}
		w, err := workspace.Watch(sp.dirs, workspace.WatchOptions{
			OnChange: sp.onChange, OnDegraded: m.watchProblem, Pick: redact.DotEnvName, Found: sp.envs.Found,
		})
		if err != nil {
			m.watchProblem(err.Error())
			return
		}
		sp.mu.Lock()
		sp.w = w
		sp.mu.Unlock()
		sp.envs.Watch(w)
	})
}

// subscribe has fn receive the watcher's batches until the returned
// function is called.
func (sp *space) subscribe(fn func(paths []string)) (unsubscribe func()) {
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

func (sp *space) onChange(paths []string) {
	sp.mu.Lock()
	subs := make([]func([]string), 0, len(sp.subs))
	for _, fn := range sp.subs {
		subs = append(subs, fn)
	}
	sp.mu.Unlock()
	for _, fn := range subs {
		fn(paths)
	}
}
