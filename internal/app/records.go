package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/session"
	"github.com/bridle-dev/bridle/store"
)

// Log is a session's event log as `bridle log` shows it: the records as
// stored, and each one decoded (Events[i] is Records[i]). A record that
// cannot be decoded keeps its error in Errs[i] and a payload that is
// never projected, so the rest still prints.
type Log struct {
	Records []store.Record
	Events  []event.Event
	Errs    []error
}

// ReadLog reads session id's log from the database, which it opens only for
// that. A session the database does not hold is an error naming it.
func (a *App) ReadLog(ctx context.Context, id string) (Log, error) {
	if !storeExists(a.DB) {
		return Log{}, classed{ErrBadInput, fmt.Errorf("no session %q: the database %s does not exist", id, a.DB)}
	}
	st, err := store.Open(ctx, a.DB)
	if err != nil {
		return Log{}, err
	}
	defer st.Close()
	if _, err := st.Session(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Log{}, classed{ErrBadInput, fmt.Errorf("no session %q in %s; list them with `bridle sessions`", id, a.DB)}
		}
		return Log{}, err
	}
	recs, err := st.Events(ctx, id, 0)
	if err != nil {
		return Log{}, err
	}
	l := Log{Records: recs, Events: make([]event.Event, len(recs)), Errs: make([]error, len(recs))}
	for i, r := range recs {
		p, err := event.Decode(event.Kind(r.Kind), r.Payload)
		l.Events[i] = event.Event{Seq: r.Seq, Time: time.UnixMilli(r.CreatedAt), Tokens: r.Tokens, Payload: p}
		if err != nil {
			l.Errs[i] = err
			l.Events[i].Payload = event.ModeChanged{} // never projected
		}
	}
	return l, nil
}

// View is event i as `bridle log --json` prints it; an event that
// cannot be decoded keeps its stored kind and payload.
func (l Log) View(i int) (session.EventView, error) {
	v, err := session.ViewEvent(l.Events, i, l.Records[i].Payload)
	if err != nil {
		return v, err
	}
	v.Kind = l.Records[i].Kind
	return v, nil
}

// Replaces is what event i, a compaction, summarises; nil for any other
// event.
func (l Log) Replaces(i int) *session.Replaces {
	return session.ReplacesOf(l.Events, l.Records[i].Seq)
}

// Sessions lists the database's sessions, subagents' included, newest
// first; it opens the database only for that, and a database that does
// not exist is read as empty, not made.
func (a *App) Sessions(ctx context.Context) ([]store.Session, error) {
	if !storeExists(a.DB) {
		return nil, nil
	}
	st, err := store.Open(ctx, a.DB)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rows, _, err := st.Sessions(ctx, store.ListOptions{Children: true})
	return rows, err
}

// storeExists reports whether the database file is there: the commands
// that only read it must not make it.
func storeExists(db string) bool {
	_, err := os.Stat(db)
	return err == nil
}

// SessionTree orders sessions so that each subagent's and each fork
// follows the session it came from; those keep their order (newest
// first), and so do the ones under them.
func SessionTree(rows []store.Session) []store.Session {
	children := map[string][]store.Session{}
	ids := map[string]bool{}
	from := func(r store.Session) string {
		if r.ParentID != "" {
			return r.ParentID
		}
		return r.ForkOf
	}
	for _, r := range rows {
		ids[r.ID] = true
		if f := from(r); f != "" {
			children[f] = append(children[f], r)
		}
	}
	var out []store.Session
	var add func(r store.Session)
	add = func(r store.Session) {
		out = append(out, r)
		for _, c := range children[r.ID] {
			add(c)
		}
	}
	for _, r := range rows {
		if f := from(r); f == "" || !ids[f] {
			add(r)
		}
	}
	return out
}
