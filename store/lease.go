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
		err := tx.QueryRowContext(ctx, `SELECT holder FROM leases WHERE session_id = ?`, sessionID).Scan(&cur)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("lease session %s: %w", sessionID, err)
		case cur != holder && alive(cur):
			return &LeasedError{SessionID: sessionID, Holder: cur}
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
func checkLease(ctx context.Context, tx *sql.Tx, id string, o DeleteOptions) error {
	var holder string
	err := tx.QueryRowContext(ctx, `SELECT holder FROM leases WHERE session_id = ?`, id).Scan(&holder)
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
