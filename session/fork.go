package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools/mcp"
)

// forkCommand reads "/fork N".
func forkCommand(content []event.Content) (int, bool, error) {
	name, arg, ok := slashCommand(content)
	if !ok || name != "/fork" {
		return 0, false, nil
	}
	n, ok := promptNumber(arg)
	if !ok {
		return 0, true, fmt.Errorf("%w: /fork %q: /fork takes the number of the prompt to fork before, in digits counted from 1 as /rewind lists them (e.g. /fork 3)", ErrInvalid, arg)
	}
	return n, true, nil
}

// Fork makes a new session whose history is session id's before its
// prompt n (counted from 1, as /rewind counts): the parent's events are
// shared, not copied (the fork's row names them, and its own events are
// numbered after them). No file is touched. The fork is not opened: the
// editor opens it with session/load, or prompts it.
func (m *Manager) Fork(ctx context.Context, id string, n int) (Info, error) {
	parent, err := m.forkable(ctx, id)
	if err != nil {
		return Info{}, err
	}
	prompts := promptSeqs(parent.Events())
	if n < 1 || n > len(prompts) {
		return Info{}, fmt.Errorf("%w: /fork %d: session %s has %d prompts", ErrInvalid, n, id, len(prompts))
	}
	info := parent.Info()
	row := store.Session{Cwd: info.Cwd, AdditionalDirs: info.AdditionalDirs, Title: forkTitle(info.Title, id, fmt.Sprintf(" before prompt %d", n))}
	return m.fork(ctx, parent, row, prompts[n-1]-1)
}

// ForkParams is what ACP's session/fork asks for: a fork of session ID
// as it stands, opened from Cwd (the parent's) with AdditionalDirs as its
// only extra roots and MCPServers as its servers, as session/new's are.
type ForkParams struct {
	ID             string
	Cwd            string
	AdditionalDirs []string
	MCPServers     []acp.MCPServer
}

// ForkAll makes a new session whose history is session p.ID's finished
// turns: all of it, or, while a turn runs (or a crash left one open or a
// rewind half done), what came before that turn, so the fork never
// starts inside a turn whose tools it would run again. Like Fork, it
// shares the parent's events and does not open the fork. Everything the
// request says is checked before the parent is opened (which takes its
// lease and may recover it) and before anything is stored: a refused
// fork leaves no trace.
func (m *Manager) ForkAll(ctx context.Context, p ForkParams) (Info, error) {
	row, err := m.storedForkable(ctx, p.ID)
	if err != nil {
		return Info{}, err
	}
	if err := checkDir(p.Cwd, "cwd"); err != nil {
		return Info{}, err
	}
	if filepath.Clean(p.Cwd) != filepath.Clean(row.Cwd) {
		return Info{}, fmt.Errorf("%w: session %s belongs to %s, not %s; fork it from that directory", ErrInvalid, p.ID, row.Cwd, p.Cwd)
	}
	for _, d := range p.AdditionalDirs {
		if err := checkDir(d, "additionalDirectories"); err != nil {
			return Info{}, err
		}
	}
	if err := mcp.Check(mcpServers(p.MCPServers)); err != nil {
		return Info{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	parent, err := m.forkable(ctx, p.ID)
	if err != nil {
		return Info{}, err
	}
	info := parent.Info()
	fork := store.Session{Cwd: info.Cwd, AdditionalDirs: p.AdditionalDirs, Title: forkTitle(info.Title, p.ID, "")}
	return m.fork(ctx, parent, fork, finishedThrough(parent.Events()))
}

// storedForkable is the stored row of session id, if it may be forked:
// read without opening the session.
func (m *Manager) storedForkable(ctx context.Context, id string) (store.Session, error) {
	row, err := m.cfg.Store.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, fmt.Errorf("%w: no session %q in %s; list sessions with session/list or `bridle sessions`", ErrNotFound, id, m.cfg.Store.Path())
	}
	if err != nil {
		return store.Session{}, err
	}
	if row.ParentID != "" {
		return store.Session{}, fmt.Errorf("%w: session %s is a subagent's; fork its parent %s instead", ErrInvalid, id, row.ParentID)
	}
	return row, nil
}

// forkable opens session id, if it may be forked.
func (m *Manager) forkable(ctx context.Context, id string) (*Session, error) {
	if _, err := m.storedForkable(ctx, id); err != nil {
		return nil, err
	}
	return m.Get(ctx, id)
}

// fork stores row as a fork of parent holding its events through seq
// through, with the parent's model and mode.
func (m *Manager) fork(ctx context.Context, parent *Session, row store.Session, through int64) (Info, error) {
	fid, err := newID()
	if err != nil {
		return Info{}, err
	}
	info := parent.Info()
	row.ID, row.Model, row.Mode, row.ForkOf, row.ForkThrough = fid, info.Model, string(parent.Mode()), info.ID, through
	if _, err := m.cfg.Store.CreateSession(ctx, row); err != nil {
		return Info{}, fmt.Errorf("create the fork: %w", err)
	}
	m.log.Info("session forked", "session", info.ID, "fork", fid, "through", through)
	stored, err := m.cfg.Store.Session(ctx, fid)
	if err != nil {
		return Info{}, err
	}
	return infoOf(stored), nil
}

// finishedThrough is the seq of the last event of events' finished
// turns: the last event, unless a turn is open, then the one before its
// prompt or its rewind's start (0 when there is none).
func finishedThrough(events []event.Event) int64 {
	for i := len(events) - 1; i >= 0; i-- {
		f := events[i].Kind().Facts()
		if f.ClosesTurn {
			break
		}
		// A rewind writes no prompt: its start opens what it does.
		if f.OpensTurn || events[i].Kind() == event.KindRewindStarted {
			return events[i].Seq - 1
		}
	}
	if len(events) == 0 {
		return 0
	}
	return events[len(events)-1].Seq
}

// forkTitle names a fork after its parent: "Fork of TITLE" and tail
// (" before prompt N" for /fork N), within a title's bound. The parent's title goes in as it is, never
// quoted: quoting escaped the quotes and backslashes of the parent's own
// quoted title, so each level of forking doubled the title (134 MB at
// depth 25). It is cut to leave room for the rest, so a fork of a fork
// of … stays as long as any title.
func forkTitle(parent, parentID, tail string) string {
	if parent == "" {
		parent = parentID
	}
	const head = "Fork of "
	return head + clipTitle(parent, store.MaxTitle-len(head)-len(tail)) + tail
}
