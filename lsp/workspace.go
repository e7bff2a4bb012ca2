package lsp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/config"
)

// Workspace is what one session's tools see of the language servers: the
// servers of the files in its directories, and what is still to be said
// of its earlier edits. Sessions on the same root share the servers.
type Workspace struct {
	m    *Manager
	dirs []string

	mu      sync.Mutex
	pending []*pending
	// offered is Offered's answer for the settings' reading offeredFor,
	// made or confirmed at offeredAt.
	offered, offeredKnown bool
	offeredFor            uint64
	offeredAt             time.Time
}

// pending is an edit whose diagnostics were not given in its result: its
// server was starting (sent false: the texts wait to be sent), or did
// not answer in time.
type pending struct {
	e             *entry
	path          string
	before, after []byte
	sent          bool
	c             change
	at            time.Time
}

// Bounds of what waits to be said.
const (
	maxPending = 16
	pendingFor = 10 * time.Minute
	// maxPendingText bounds the texts one edit keeps for later.
	maxPendingText = 4 << 20
)

// Workspace returns the view of a session whose directories are dirs
// (the first is the session's directory).
func (m *Manager) Workspace(dirs []string) *Workspace {
	return &Workspace{m: m, dirs: dirs}
}

// Edited tells the servers of path (absolute) that it now holds after
// (before is what it held; nil for a new file), and returns what the
// model should read of it: the diagnostics the change introduced, a
// server still loading, or a crash; then what arrived since for an
// earlier edit whose result could not say. It waits as long as the
// settings' wait_seconds, and ctx, let it. "" when no server serves the
// file: nothing is started then.
func (w *Workspace) Edited(ctx context.Context, path string, before, after []byte) string {
	cfg := w.m.cfg.Settings(w.dirs[0])
	servers, err := cfg.Servers()
	if err != nil {
		// Said in the log once per reading of the settings, and by
		// bridle doctor.
		if _, said := w.m.warned.LoadOrStore(cfg.Version, true); !said {
			w.m.cfg.Log.Warn("no language server runs", "err", err)
		}
		return ""
	}
	wait := cfg.LSPSection().Wait()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out, earlier []string
	for _, e := range w.entriesFor(cfg, servers, path) {
		srv, note, err := e.server(wctx)
		if note != "" {
			out = append(out, note)
		}
		if err == nil {
			// The server's earlier edits first: one of this same file
			// must reach it before this one does.
			earlier = append(earlier, w.since(wctx, e)...)
		}
		out = append(out, w.edit(wctx, e, srv, err, path, before, after, wait)...)
	}
	earlier = append(earlier, w.since(wctx, nil)...)
	return strings.Join(append(out, earlier...), "\n")
}

// entriesFor are the entries of the servers that serve path and are
// found, made if need be (no server is started).
func (w *Workspace) entriesFor(cfg *config.Config, servers []config.Server, path string) []*entry {
	var out []*entry
	for _, s := range servers {
		if s.Off != "" || !serves(s, path) {
			continue
		}
		program, err := Find(s, w.m.cfg.Look)
		if err != nil {
			continue
		}
		root, ok := w.rootOf(path, s.RootMarkers)
		if !ok {
			continue
		}
		e, err := w.m.entryFor(s, program, root, cfg.LSPSection())
		if err != nil {
			w.m.cfg.Log.Warn("language server not started", "language", s.Language, "err", err)
			continue
		}
		out = append(out, e)
	}
	return out
}

// serves says whether s serves the file at path.
func serves(s config.Server, path string) bool {
	base := filepath.Base(path)
	for _, p := range s.Files {
		if ok, _ := filepath.Match(p, base); ok {
			return true
		}
	}
	return false
}

// rootOf is the server's root for path: the nearest directory at or above
// the file, inside the session's directory that holds it, with one of the
// markers; that directory when none has one. false: the file is in none
// of the session's directories.
func (w *Workspace) rootOf(path string, markers []string) (string, bool) {
	var top string
	for _, d := range w.dirs {
		if strings.HasPrefix(path, d+string(filepath.Separator)) && len(d) > len(top) {
			top = d
		}
	}
	if top == "" {
		return "", false
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		for _, m := range markers {
			if _, err := os.Lstat(filepath.Join(dir, m)); err == nil {
				return dir, true
			}
		}
		if dir == top || len(dir) <= len(top) {
			return top, true
		}
	}
}

// edit is one server's part of an edit's result.
func (w *Workspace) edit(ctx context.Context, e *entry, srv *Server, err error, path string, before, after []byte, wait time.Duration) []string {
	name := filepath.Base(e.spec.program)
	var out []string
	switch {
	case errors.Is(err, errStarting):
		later := w.keep(&pending{e: e, path: path, before: before, after: after, at: time.Now()})
		return append(out, fmt.Sprintf("%s is starting; %s.", name, later))
	case err != nil:
		return out
	case srv.caps.noSync:
		return out
	}
	c, err := srv.edit(ctx, path, before, after)
	if err != nil && ctx.Err() != nil && srv.alive() {
		// The wait ended while the texts were being sent (earlier edits
		// took it): as a server that did not answer.
		c, err = change{}, nil
	}
	if err != nil {
		if !srv.alive() {
			// It died on this edit: said here, once.
			if n := e.failedNow(srv); n != "" {
				return append(out, n)
			}
		}
		return append(out, fmt.Sprintf("%s: no diagnostics for this edit: %v", name, err))
	}
	if !c.haveNow || !c.haveBefore {
		var later string
		if c.version == 0 {
			later = w.keep(&pending{e: e, path: path, before: before, after: after, at: time.Now()})
		} else {
			later = w.keep(&pending{e: e, path: path, sent: true, c: c, at: time.Now()})
		}
		why := fmt.Sprintf("did not answer within %v", wait)
		switch {
		case srv.progress.Load() > 0:
			why = "is still loading the workspace"
		case !c.haveBefore:
			why = fmt.Sprintf("has not answered within %v (it may still be loading the workspace)", wait)
		}
		return append(out, fmt.Sprintf("%s %s; %s.", name, why, later))
	}
	return append(out, w.report(name, srv, path, c, "after this edit", true)...)
}

// report words what a change introduced: in the file, then in the other
// files the server published again meanwhile. Without a baseline (known
// false: the file's state before never came) every problem is said.
func (w *Workspace) report(name string, srv *Server, path string, c change, when string, known bool) []string {
	problems := append(introducedIn(path, c.before, c.after), republished(srv, c.others)...)
	if len(problems) == 0 {
		left := 0
		for _, d := range c.after.items {
			if shown(d) {
				left++
			}
		}
		msg := fmt.Sprintf("%s: no new problems %s.", name, when)
		if left > 0 {
			msg = fmt.Sprintf("%s: no new problems %s (%d in %s from before, not repeated).", name, when, left, w.show(path))
		}
		return []string{msg}
	}
	noun := "problem"
	if len(problems) > 1 {
		noun = "problems"
	}
	out := []string{fmt.Sprintf("%s: %d new %s %s:", name, len(problems), noun, when)}
	switch {
	case !known:
		out = []string{fmt.Sprintf("%s: %d %s %s (what was wrong before it is not known):", name, len(problems), noun, when)}
	case c.disk:
		out = []string{fmt.Sprintf("%s: %d new %s %s, or after files changed on disk since its last report:", name, len(problems), noun, when)}
	}
	out = append(out, lines(problems, w.show)...)
	if c.after.cut > 0 {
		out = append(out, fmt.Sprintf("(%s sent %d more for %s, not read: bridle keeps %d of a file's)", name, c.after.cut, w.show(path), MaxPerFile))
	}
	return out
}

// show is a path as the model names it: relative to the session's
// directory when inside it.
func (w *Workspace) show(path string) string {
	if rel, err := filepath.Rel(w.dirs[0], path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

// keep remembers an edit whose result could not give its diagnostics;
// later says what the result may promise of them.
func (w *Workspace) keep(p *pending) (later string) {
	if len(p.before)+len(p.after) > maxPendingText {
		return "this edit's diagnostics will not be reported (the file is too large to keep for later)"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, p)
	if len(w.pending) > maxPending {
		w.pending = w.pending[len(w.pending)-maxPending:]
	}
	return "the diagnostics of this edit will come with a later edit's result"
}

// since says what arrived for the earlier edits whose results could not
// say (those of only's server; nil: of every server): the texts of those
// whose server was starting are sent now that it runs, and the
// diagnostics of those sent are read if they came.
func (w *Workspace) since(ctx context.Context, only *entry) []string {
	w.mu.Lock()
	var list []*pending
	rest := w.pending[:0:0]
	for _, p := range w.pending {
		if only == nil || p.e == only {
			list = append(list, p)
		} else {
			rest = append(rest, p)
		}
	}
	w.pending = rest
	w.mu.Unlock()
	var keep []*pending
	var said []string
	for _, p := range list {
		if time.Since(p.at) > pendingFor {
			continue
		}
		if ctx.Err() != nil {
			keep = append(keep, p)
			continue
		}
		srv := p.e.running()
		if srv == nil {
			if p.e.isStarting() {
				keep = append(keep, p)
			}
			continue
		}
		if !p.sent {
			c, err := srv.edit(ctx, p.path, p.before, p.after)
			switch {
			case err != nil:
				continue
			case c.version == 0:
				// The wait ended before the edit's text was sent.
				keep = append(keep, p)
				continue
			}
			p.sent, p.c = true, c
		}
		if !p.c.haveNow {
			p.c.after, p.c.haveNow = srv.diags.get(p.path, p.c.version)
		}
		if !p.c.haveNow {
			keep = append(keep, p)
			continue
		}
		// Without the file's state before the edit, what is wrong with it
		// now is all said.
		said = append(said, w.report(filepath.Base(p.e.spec.program), srv, p.path, p.c, "after an earlier edit of "+w.show(p.path), p.c.haveBefore)...)
	}
	w.mu.Lock()
	w.pending = append(keep, w.pending...)
	w.mu.Unlock()
	return said
}

// isStarting says a start is under way.
func (e *entry) isStarting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.starting != nil
}

// ServerFor returns the running server of path's language and root,
// starting it (waiting as long as ctx lets it), for the tools that ask a
// server something of a file (Server.Sync, then Server.Request). note is
// a failure not said yet, to be said once; the error says there is no
// server for the file, or none now.
func (w *Workspace) ServerFor(ctx context.Context, path string) (srv *Server, note string, err error) {
	cfg := w.m.cfg.Settings(w.dirs[0])
	servers, err := cfg.Servers()
	if err != nil {
		return nil, "", err
	}
	for _, e := range w.entriesFor(cfg, servers, path) {
		return e.server(ctx)
	}
	return nil, "", ErrNoServer
}

// ErrNoServer is ServerFor's error for a file no server serves.
var ErrNoServer = errors.New("no language server serves this file")
