package session

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/sandbox/redact"
	"github.com/bridle-dev/bridle/workspace"
)

// space is what the sessions on one workspace (the same directories)
// share in this process: one file watcher, and the list of the .env files
// below the directories (redact.DotEnvs), which the watcher's walk fills
// and its events keep current. Session start never walks the tree: the
// watcher starts once the editor has the first session (Ready), or at the
// session's first use of it, whichever comes first, and its walk goes on
// in the background; the last session to close stops it.
type space struct {
	key  string
	dirs []string
	refs int // guarded by the Manager's spaces.mu
	envs *redact.DotEnvs

	started sync.Once
	// w is set by start; nil when the workspace is not watched (the whole
	// file system, or the OS gave no watcher): envs then walks the tree
	// itself.
	w *workspace.Watcher

	mu sync.Mutex
	// subs receive the watcher's batches (files.onChange), by id.
	subs map[int]func(paths []string)
	next int
}

// spaces are the Manager's open spaces, by their directories.
type spaces struct {
	mu sync.Mutex
	by map[string]*space
}

// openSpace returns the space of dirs, started if no session has it open;
// closeSpace gives it back.
func (m *Manager) openSpace(dirs []string) *space {
	key := strings.Join(dirs, "\x00")
	m.spaces.mu.Lock()
	defer m.spaces.mu.Unlock()
	if sp := m.spaces.by[key]; sp != nil {
		sp.refs++
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
	last := sp.refs == 0
	if last {
		delete(m.spaces.by, sp.key)
	}
	m.spaces.mu.Unlock()
	if last {
		sp.started.Do(func() {}) // no watcher starts after this
		if sp.w != nil {
			sp.w.Close()
		}
	}
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
		sp.w = w
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
