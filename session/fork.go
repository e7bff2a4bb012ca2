package session

import (
	"context"
	"fmt"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/store"
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
	parent, err := m.Get(ctx, id)
	if err != nil {
		return Info{}, err
	}
	if p := parent.Info().ParentID; p != "" {
		return Info{}, fmt.Errorf("%w: session %s is a subagent's; fork its parent %s instead", ErrInvalid, id, p)
	}
	prompts := promptSeqs(parent.Events())
	if n < 1 || n > len(prompts) {
		return Info{}, fmt.Errorf("%w: /fork %d: session %s has %d prompts", ErrInvalid, n, id, len(prompts))
	}
	fid, err := newID()
	if err != nil {
		return Info{}, err
	}
	info := parent.Info()
	row := store.Session{ID: fid, Cwd: info.Cwd, AdditionalDirs: info.AdditionalDirs, Model: info.Model, Mode: string(parent.Mode()),
		Title: forkTitle(info.Title, id, n), ForkOf: id, ForkThrough: prompts[n-1] - 1}
	if _, err := m.cfg.Store.CreateSession(ctx, row); err != nil {
		return Info{}, fmt.Errorf("create the fork: %w", err)
	}
	m.log.Info("session forked", "session", id, "fork", fid, "before_prompt", n)
	stored, err := m.cfg.Store.Session(ctx, fid)
	if err != nil {
		return Info{}, err
	}
	return infoOf(stored), nil
}

// forkTitle names a fork after its parent: "Fork of TITLE before prompt
// N", within a title's bound. The parent's title goes in as it is, never
// quoted: quoting escaped the quotes and backslashes of the parent's own
// quoted title, so each level of forking doubled the title (134 MB at
// depth 25). It is cut to leave room for the rest, so a fork of a fork
// of … stays as long as any title.
func forkTitle(parent, parentID string, n int) string {
	if parent == "" {
		parent = parentID
	}
	tail := fmt.Sprintf(" before prompt %d", n)
	const head = "Fork of "
	return head + clipTitle(parent, store.MaxTitle-len(head)-len(tail)) + tail
}
