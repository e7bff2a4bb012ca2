package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// LeasedError is returned when a live process already serves a session.
type LeasedError struct {
	SessionID string
	Holder    string
	// Closing says the holder is shutting down (Closing): it gives the
	// session up once its turn has recorded how it ended.
	Closing bool
}

func (e *LeasedError) Error() string {
	return fmt.Sprintf("session %s is held by another process (%s)", e.SessionID, e.Holder)
}

// Acquire makes holder the process serving a session. If another holder
// has it and alive says that holder still runs, it fails with a
// *LeasedError; a dead holder's lease is taken over.
func (s *Store) Acquire(ctx context.Context, sessionID, holder string, alive func(holder string) bool) error {
	return s.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var cur string
		var at int64
		err := tx.QueryRowContext(ctx, `SELECT holder, acquired_at FROM leases WHERE session_id = ?`, sessionID).Scan(&cur, &at)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("lease session %s: %w", sessionID, err)
		case cur != holder && alive(cur):
			return &LeasedError{SessionID: sessionID, Holder: cur, Closing: at < 0}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO leases (session_id, holder, acquired_at) VALUES (?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, acquired_at = excluded.acquired_at`,
			sessionID, holder, now())
		if err != nil {
			return fmt.Errorf("lease session %s: %w", sessionID, explainWriteErr(err))
		}
		return nil
	})
}

// Closing marks every lease of holder as about to be given up: the
// process is shutting down, and another that wants one of its sessions
// may wait for it rather than be refused. The mark is a negative
// acquired_at, so a bridle of an earlier schema reads the lease as
// before.
func (s *Store) Closing(ctx context.Context, holder string) error {
	return s.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE leases SET acquired_at = -acquired_at WHERE holder = ? AND acquired_at > 0`, holder)
		if err != nil {
			return fmt.Errorf("mark the leases of %s as closing: %w", holder, explainWriteErr(err))
		}
		return nil
	})
}

// Release gives up holder's lease on a session, if it still has it.
func (s *Store) Release(ctx context.Context, sessionID, holder string) error {
	return s.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM leases WHERE session_id = ? AND holder = ?`, sessionID, holder)
		if err != nil {
			return fmt.Errorf("release session %s: %w", sessionID, explainWriteErr(err))
		}
		return nil
	})
}

// checkLease fails with a *LeasedError if a live holder other than the
// deleting one has the session.
func checkLease(ctx context.Context, q querier, id string, o DeleteOptions) error {
	var holder string
	err := q.QueryRowContext(ctx, `SELECT holder FROM leases WHERE session_id = ?`, id).Scan(&holder)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("delete session %s: %w", id, err)
	case holder != o.Holder && o.Alive != nil && o.Alive(holder):
		return &LeasedError{SessionID: id, Holder: holder}
	}
	return nil
}
