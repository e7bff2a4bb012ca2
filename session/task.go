package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/display"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/session/subagent"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// The task tool lives in session/subagent; this file is what a session
// gives it (subagent.Parent): its log, its tools, and the children it
// creates, runs and recovers, which are sessions like any other.

func (s *Session) system() string {
	if s.parent != nil || s.Info().ParentID != "" {
		return s.m.cfg.System + subagent.System
	}
	return s.m.cfg.System
}

// asParent is a top-level session as its task tool sees it.
type asParent struct{ s *Session }

var _ subagent.Parent = asParent{}

func (p asParent) ID() string                { return p.s.ID() }
func (p asParent) Mode() permission.Mode     { return p.s.Mode() }
func (p asParent) Registry() *tools.Registry { return p.s.registry() }
func (p asParent) Has(name string) bool      { return p.s.tool(name) != nil }
func (p asParent) MaxTurns() int             { return p.s.m.cfg.MaxIterations }
func (p asParent) Events() []event.Event     { return p.s.Events() }
func (p asParent) Env(key string) *tools.Env { return p.s.env(key) }
func (p asParent) NewID() (string, error)    { return newID() }

func (p asParent) Warn(msg string, args ...any) { p.s.m.log.Warn(msg, args...) }

func (p asParent) Append(ctx context.Context, payloads ...event.Payload) error {
	_, err := p.s.append(ctx, payloads...)
	return err
}

func (p asParent) Show(ctx context.Context, u acp.SessionUpdate) { p.s.send(ctx, u) }

func (p asParent) Ask(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return p.s.client().RequestPermission(ctx, req)
}

// Spawn creates the child st names, live while it runs, and runs its turn
// on the caller's goroutine.
func (p asParent) Spawn(ctx context.Context, st event.SubagentStarted, b subagent.Budget, cl subagent.Client) (subagent.Run, error) {
	child, err := p.s.m.newChild(ctx, p.s, st)
	if err != nil {
		return subagent.Run{}, err
	}
	defer p.s.m.closeChild(child)
	child.cl = cl
	t := &turn{s: child, budget: budget{Turns: b.Turns, Tokens: b.Tokens}}
	stop, runErr := child.runChild(ctx, t, st.Prompt)
	return subagent.Run{Stop: string(stop), Err: runErr, Iters: t.iters, Used: t.used, Spent: t.spent, Events: child.Events()}, nil
}

// Reopen recovers a child that a restart cut short; it is not made live.
func (p asParent) Reopen(ctx context.Context, st event.SubagentStarted) ([]event.Event, bool, error) {
	m := p.s.m
	row, err := m.cfg.Store.Session(ctx, st.ChildID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	m.mu.Lock()
	live, ok := m.live[st.ChildID]
	m.mu.Unlock()
	if ok {
		// Opened (and so recovered) already, by its id.
		return live.Events(), true, nil
	}
	if err := m.lease(ctx, st.ChildID); err != nil {
		return nil, true, err
	}
	defer m.release(st.ChildID)
	events, err := m.loadEvents(ctx, st.ChildID)
	if err != nil {
		return nil, true, err
	}
	c, err := newSession(m, row, events)
	if err != nil {
		return nil, true, err
	}
	defer c.close()
	c.parent, c.allowed = p.s, st.Tools
	c.muted.Store(true)
	if err := c.recover(ctx); err != nil {
		return nil, true, err
	}
	return c.Events(), true, nil
}

// newChild creates a subagent's session and makes it live while it runs,
// so that session/cancel by its id reaches it and a second opening of it
// finds it busy.
func (m *Manager) newChild(ctx context.Context, parent *Session, st event.SubagentStarted) (*Session, error) {
	info := parent.Info()
	started := event.SessionStarted{V: event.Version, Cwd: info.Cwd, AdditionalDirs: info.AdditionalDirs, Model: info.Model, Mode: string(parent.Mode())}
	first := []event.Payload{started}
	// The child works inside the parent's plan: it gets a copy, which its
	// window keeps in view, and no plan tool to change it.
	if plan, ok := currentPlan(parent.Events()); ok {
		first = append(first, plan)
	}
	var recs []store.Record
	for _, p := range first {
		rec, err := m.record(info.Cwd, info.Model, p, -1)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	row := store.Session{ID: st.ChildID, Cwd: info.Cwd, AdditionalDirs: info.AdditionalDirs, Model: info.Model, Mode: started.Mode,
		ParentID: parent.ID(), Title: display.Label(st.Description)}
	recs, err := m.cfg.Store.CreateSession(ctx, row, recs...)
	if err != nil {
		return nil, fmt.Errorf("create the subagent's session: %w", err)
	}
	row.CreatedAt, row.UpdatedAt = recs[0].CreatedAt, recs[0].CreatedAt
	m.cfg.Fault.committed(1)
	if err := m.lease(ctx, st.ChildID); err != nil {
		return nil, err
	}
	events := make([]event.Event, len(recs))
	for i, r := range recs {
		events[i] = event.Event{Seq: r.Seq, Time: msTime(r.CreatedAt), Payload: first[i], Tokens: r.Tokens}
	}
	s, err := newSession(m, row, events)
	if err != nil {
		m.release(st.ChildID)
		return nil, err
	}
	s.parent, s.allowed = parent, st.Tools
	// A child's files are its parent's, as the editor holds them: the
	// editor knows only the parent's session.
	s.box.Buffers, s.box.Texts = parent.box.Buffers, parent.box.Texts
	m.mu.Lock()
	m.live[s.ID()] = s
	m.mu.Unlock()
	m.log.Info("subagent started", "session", parent.ID(), "child", s.ID(), "tools", st.Tools)
	return s, nil
}

// closeChild ends a child's stay among the live sessions.
func (m *Manager) closeChild(s *Session) {
	m.mu.Lock()
	if m.live[s.ID()] == s {
		delete(m.live, s.ID())
	}
	m.mu.Unlock()
	s.close()
	m.release(s.ID())
}

// runChild runs the child's one turn on the caller's goroutine, as a
// cancellable turn of the child (so Cancel and Shutdown reach it).
func (s *Session) runChild(ctx context.Context, t *turn, prompt string) (StopReason, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	s.mu.Lock()
	s.cancel, s.done = cancel, done
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel, s.done = nil, nil
		s.mu.Unlock()
		close(done)
	}()
	return t.run(ctx, []event.Content{{Type: "text", Text: prompt}})
}

// withChildChanges adds to a task call's changes what its subagent did
// that the call's own recording did not see. With all (the subagent's
// commands were watched and recorded in its own log, and the task call
// was not scanned), that is every edit and command of the subagent;
// otherwise the scans around the call saw what reached the disk, and
// only the edits that went into the editor's buffers are added. The
// child kept each file's content before (in its own checkpoints); it is
// kept again among this session's, where the parent's rewind looks. What
// the subagent's commands could not record is the call's unscanned too.
func (s *Session) withChildChanges(ctx context.Context, key string, changes []event.FileChange, unscanned string, all bool) ([]event.FileChange, string) {
	var child string
	for _, e := range s.Events() {
		if st, ok := e.Payload.(event.SubagentStarted); ok && st.Key == key {
			child = st.ChildID
		}
	}
	if child == "" {
		return changes, unscanned
	}
	events, err := s.m.loadEvents(context.WithoutCancel(ctx), child)
	if err != nil {
		s.m.log.Warn("a subagent's changes are not known to the rewind", "session", s.row.ID, "child", child, "err", err)
		if all && unscanned == "" {
			unscanned = "the subagent's log could not be read: " + err.Error()
		}
		return changes, unscanned
	}
	seen := map[string]bool{}
	for _, c := range changes {
		seen[c.Path] = true
	}
	done := map[string]bool{} // keys of edits that completed
	for _, e := range events {
		if r, ok := e.Payload.(event.ToolResult); ok && r.Status == "completed" {
			done[r.Key] = true
		}
	}
	index := map[string]int{}
	note := func(c event.FileChange) {
		if i, ok := index[c.Path]; ok {
			changes[i].After = c.After
			return
		}
		if c.Before != "" && c.Before != event.NotKept {
			if s.checkpoints().Adopt(child, c.Before) != nil {
				c.Before, c.Why = event.NotKept, "the subagent's checkpoint of it is gone"
			}
		}
		index[c.Path] = len(changes)
		changes = append(changes, c)
	}
	for _, e := range events {
		switch v := e.Payload.(type) {
		case event.ToolStarted:
			if v.Path == "" || (v.BeforeHash == "" && v.AfterHash == "") || !done[v.Key] || seen[v.Path] {
				continue
			}
			if !all && v.BeforeHash == "" {
				continue // new files reach the disk (made there, or saved by the editor that made them), and the scans have them
			}
			c := event.FileChange{Path: v.Path, Before: v.BeforeHash, After: v.AfterHash}
			if fi, err := s.root.Lstat(v.Path); err == nil && c.Before != "" {
				c.Mode = uint32(fi.Mode().Perm()) // an edit leaves it as it was
			}
			note(c)
		case event.ToolResult:
			if !all {
				continue
			}
			for _, c := range v.Changed {
				note(c)
			}
			if v.Unscanned != "" && unscanned == "" {
				unscanned = "a command of the subagent: " + v.Unscanned
			}
		}
	}
	// A file the subagent changed and changed back is no change.
	changes = slices.DeleteFunc(changes, func(c event.FileChange) bool {
		return c.Before == c.After && c.Before != event.NotKept
	})
	slices.SortFunc(changes, func(a, b event.FileChange) int { return strings.Compare(a.Path, b.Path) })
	return changes, unscanned
}
