package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// writeReq is one unit of work for the writer goroutine.
type writeReq struct {
	ctx   context.Context
	apply func(ctx context.Context, tx *sql.Tx) error
	done  chan error
}

var errClosed = errors.New("the database is closed")

// do runs apply in the writer and waits until it has been committed (or
// failed). It waits even if ctx ends meanwhile, because a queued write may
// already be on disk and the caller must know which.
func (s *Store) do(ctx context.Context, apply func(context.Context, *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &writeReq{ctx: ctx, apply: apply, done: make(chan error, 1)}
	if err := s.send(req); err != nil {
		return err
	}
	return <-req.done
}

func (s *Store) send(req *writeReq) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	s.writes <- req
	return nil
}

// maxBatch bounds how many queued writes share one transaction.
const maxBatch = 256

func (s *Store) writer() {
	defer close(s.done)
	for req := range s.writes {
		batch := []*writeReq{req}
	drain:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-s.writes:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commit(batch)
	}
}

// commit applies a batch in one transaction. If that fails, each request
// is retried alone so that one bad write cannot fail its neighbours.
func (s *Store) commit(batch []*writeReq) {
	var live []*writeReq
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	if len(live) > 1 {
		if err := s.tx(live); err == nil {
			for _, r := range live {
				r.done <- nil
			}
			return
		}
	}
	for _, r := range live {
		r.done <- s.tx([]*writeReq{r})
	}
}

func (s *Store) tx(reqs []*writeReq) error {
	ctx := context.Background()
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write to %s: %w", s.path, explainWriteErr(err))
	}
	for _, r := range reqs {
		if err := r.apply(ctx, tx); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit to %s: %w", s.path, explainWriteErr(err))
	}
	s.commits.Add(1)
	return nil
}

// explainWriteErr adds what to do to the errors a user can fix.
func explainWriteErr(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "SQLITE_FULL") || strings.Contains(msg, "database or disk is full"):
		return fmt.Errorf("%w: the disk is full; free some space and try again (nothing was lost: the last committed event is intact)", err)
	case strings.Contains(msg, "SQLITE_READONLY") || strings.Contains(msg, "readonly"):
		return fmt.Errorf("%w: the database is read-only; check the file's permissions", err)
	}
	return err
}

func now() int64 { return time.Now().UnixMilli() }

// CreateSession stores a new session together with its first events. Its
// title is cut to MaxTitle.
func (s *Store) CreateSession(ctx context.Context, sess Session, first ...Record) ([]Record, error) {
	if sess.CreatedAt == 0 {
		sess.CreatedAt = now()
	}
	sess.UpdatedAt = sess.CreatedAt
	var out []Record
	full := s.injectFull(len(first))
	err := s.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var parent any
		if sess.ParentID != "" {
			parent = sess.ParentID
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, cwd, additional_dirs, model, mode, parent_id, title, created_at, updated_at, fork_of, fork_through)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sess.ID, sess.Cwd, joinDirs(sess.AdditionalDirs), sess.Model, sess.Mode, parent, clipTitle(sess.Title), sess.CreatedAt, sess.UpdatedAt, sess.ForkOf, sess.ForkThrough)
		if err != nil {
			return fmt.Errorf("create session %s: %w", sess.ID, explainWriteErr(err))
		}
		out, err = s.appendTx(ctx, tx, sess.ID, first)
		if err == nil && full {
			out, err = nil, fmt.Errorf("create session %s: %w", sess.ID, explainWriteErr(errInjectedFull))
		}
		return err
	})
	return out, err
}

// Append adds records to a session's log and returns them with their seq
// and time. They are on disk when it returns.
func (s *Store) Append(ctx context.Context, sessionID string, recs ...Record) ([]Record, error) {
	var out []Record
	full := s.injectFull(len(recs))
	err := s.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = s.appendTx(ctx, tx, sessionID, recs)
		if err == nil && full {
			out, err = nil, fmt.Errorf("append to %s: %w", sessionID, explainWriteErr(errInjectedFull))
		}
		return err
	})
	return out, err
}

// FailAppendAt makes the append that carries the n-th event this Store
// writes (counted from Open, the first events of CreateSession included)
// fail as a full disk does: its inserts run, then the transaction is
// rolled back with SQLITE_FULL's message. It fails once; the appends after
// it work, as if space had been freed. It is for tests of what a failed
// commit leaves (BRIDLE_FAULT=nospace:N); n ≤ 0 turns it off.
func (s *Store) FailAppendAt(n int64) { s.failAt.Store(n) }

var errInjectedFull = errors.New("database or disk is full (SQLITE_FULL, injected by BRIDLE_FAULT=nospace)")

// injectFull counts n events about to be appended and says whether their
// append is the one FailAppendAt chose.
func (s *Store) injectFull(n int) bool {
	end := s.appended.Add(int64(n))
	at := s.failAt.Load()
	return at > 0 && at > end-int64(n) && at <= end && s.failAt.CompareAndSwap(at, 0)
}

func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, sessionID string, recs []Record) ([]Record, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	// A fork's own events follow the parent's it shares.
	var last int64
	err := tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT seq FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1),
		(SELECT fork_through FROM sessions WHERE id = ?), 0)`, sessionID, sessionID).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("append to %s: %w", sessionID, explainWriteErr(err))
	}
	at := now()
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET updated_at = ? WHERE id = ?`, at, sessionID)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", sessionID, explainWriteErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, fmt.Errorf("append to session %s: %w", sessionID, ErrNotFound)
	}
	insert := tx.StmtContext(ctx, s.insertEvent)
	defer insert.Close()
	out := make([]Record, len(recs))
	for i, r := range recs {
		last++
		r.Seq, r.CreatedAt = last, at
		if _, err := insert.ExecContext(ctx, sessionID, r.Seq, r.Kind, r.Payload, r.Tokens, r.CreatedAt); err != nil {
			return nil, fmt.Errorf("append %s to %s: %w", r.Kind, sessionID, explainWriteErr(err))
		}
		if r.Key != "" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency (session_id, key, kind, seq) VALUES (?, ?, ?, ?)`,
				sessionID, r.Key, r.Kind, r.Seq); err != nil {
				if strings.Contains(err.Error(), "UNIQUE") {
					return nil, fmt.Errorf("append %s for call %s: %w", r.Kind, r.Key, ErrDuplicate)
				}
				return nil, fmt.Errorf("append %s to %s: %w", r.Kind, sessionID, explainWriteErr(err))
			}
		}
		out[i] = r
	}
	return out, nil
}

// ErrHasForks is returned when a session to delete has forks.
var ErrHasForks = errors.New("it has forks")

// ErrDuplicate is returned when a call's record already exists: the effect
// it announces has been recorded once and must not be recorded again.
var ErrDuplicate = errors.New("already recorded")

// UpdateSession changes a session's mutable pins (mode, model, title).
// Empty fields are left as they are; a title is cut to MaxTitle. The events that justify a change are
// the caller's to append.
func (s *Store) UpdateSession(ctx context.Context, id string, mode, model, title string) error {
	return s.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET
			mode = COALESCE(NULLIF(?, ''), mode),
			model = COALESCE(NULLIF(?, ''), model),
			title = COALESCE(NULLIF(?, ''), title)
			WHERE id = ?`, mode, model, clipTitle(title), id)
		if err != nil {
			return fmt.Errorf("update session %s: %w", id, explainWriteErr(err))
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		return nil
	})
}

// DeleteOptions say what a delete must respect and report.
type DeleteOptions struct {
	// Holder is the deleting process. A session, or one of its children,
	// that another holder leases and Alive says still runs is not
	// deleted: *LeasedError.
	Holder string
	Alive  func(holder string) bool
	// Refs, if set, names references the events hold to files kept
	// outside the database by content (a prompt's images): Deleted.Refs
	// lists those the deleted events held.
	Refs *RefQuery
}

// RefQuery finds references in the events of Kind whose payload holds
// Contains; Names reads the names one such payload refers to (the
// payload's format is the caller's, not the store's). Names may be
// called more than once for a payload.
type RefQuery struct {
	Kind, Contains string
	Names          func(payload []byte) []string
}

// Deleted says what DeleteSession removed.
type Deleted struct {
	// IDs are the sessions, the one asked for first, then its children.
	IDs []string
	// Refs are the names the deleted events referred to (DeleteOptions.Refs).
	Refs []string
}

// CheckDelete says whether DeleteSession would delete a session now,
// without changing anything: ErrHasForks, or a *LeasedError when
// another live holder serves the session or one of its children. The
// caller stops nothing of its own until it knows; DeleteSession checks
// again as it deletes.
func (s *Store) CheckDelete(ctx context.Context, id string, o DeleteOptions) error {
	_, err := deletable(ctx, s.read, id, o)
	return err
}

// querier reads from the database or from a transaction.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// deletable returns the sessions a delete of id removes, the one asked
// for first, then its children (subagents' sessions), if it may: the
// session has no forks, and no other live holder leases any of them.
func deletable(ctx context.Context, q querier, id string, o DeleteOptions) ([]string, error) {
	ids := []string{id}
	for i := 0; i < len(ids); i++ {
		rows, err := q.QueryContext(ctx, `SELECT id FROM sessions WHERE parent_id = ?`, ids[i])
		if err != nil {
			return nil, fmt.Errorf("delete session %s: %w", id, err)
		}
		for rows.Next() {
			var child string
			if err := rows.Scan(&child); err == nil {
				ids = append(ids, child)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("delete session %s: %w", id, err)
		}
	}
	if err := noForks(ctx, q, id); err != nil {
		return nil, err
	}
	for _, sid := range ids {
		if err := checkLease(ctx, q, sid, o); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// noForks fails with ErrHasForks if a fork was made of the session: the
// fork reads its events, and deleting them would leave it without its
// history.
func noForks(ctx context.Context, q querier, id string) error {
	var fork string
	err := q.QueryRowContext(ctx, `SELECT id FROM sessions WHERE fork_of = ? LIMIT 1`, id).Scan(&fork)
	switch {
	case err == nil:
		return fmt.Errorf("session %s: %w: session %s is a fork of it and reads its history; delete the fork first", id, ErrHasForks, fork)
	case errors.Is(err, sql.ErrNoRows):
		return nil
	}
	return fmt.Errorf("forks of session %s: %w", id, err)
}

// DeleteSession drops a session, its children and all their events, in
// one transaction that first checks what CheckDelete checks.
func (s *Store) DeleteSession(ctx context.Context, id string, o DeleteOptions) (Deleted, error) {
	var d Deleted
	err := s.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		ids, err := deletable(ctx, tx, id, o)
		if err != nil {
			return err
		}
		d = Deleted{IDs: ids}
		if o.Refs != nil {
			if d.Refs, err = refsOf(ctx, tx, d.IDs, *o.Refs); err != nil {
				return fmt.Errorf("delete session %s: %w", id, err)
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("delete session %s: %w", id, explainWriteErr(err))
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		for _, sid := range d.IDs {
			for _, q := range []string{`DELETE FROM events WHERE session_id = ?`, `DELETE FROM idempotency WHERE session_id = ?`} {
				if _, err := tx.ExecContext(ctx, q, sid); err != nil {
					return fmt.Errorf("delete session %s: %w", id, explainWriteErr(err))
				}
			}
		}
		return nil
	})
	if err != nil {
		return Deleted{}, err
	}
	return d, nil
}

func joinDirs(dirs []string) string {
	if len(dirs) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(dirs)
	return string(b)
}

func splitDirs(s string) []string {
	var dirs []string
	_ = json.Unmarshal([]byte(s), &dirs)
	return dirs
}
