package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// Files kept outside the database by their content (a prompt's images)
// are shared: the same content sent in two sessions is one file. Events
// refer to them by name, and whether a file is still needed is whether
// any event still refers to it. There is no index of references: finding
// them is a scan of the events of one kind, done only when a session that
// held some is deleted. The store keeps payloads as bytes: how a payload
// names a file is the caller's (RefQuery.Names).

// Referenced returns which of names an event of q.Kind still refers to,
// in any session. It reads every event of that kind that holds
// q.Contains: events of other kinds are passed over without reading
// their payloads.
func (s *Store) Referenced(ctx context.Context, q RefQuery, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := s.read.QueryContext(ctx, `SELECT payload FROM events WHERE kind = ? AND instr(payload, ?) > 0`, q.Kind, q.Contains)
	if err != nil {
		return nil, fmt.Errorf("find references to %s: %w", q.Contains, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p []byte
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("find references to %s: %w", q.Contains, err)
		}
		for _, name := range q.Names(p) {
			if slices.Contains(names, name) {
				out[name] = true
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find references to %s: %w", q.Contains, err)
	}
	return out, nil
}

// refsOf returns the names the sessions' events of q.Kind refer to, each
// once.
func refsOf(ctx context.Context, tx *sql.Tx, ids []string, q RefQuery) ([]string, error) {
	var out []string
	for _, id := range ids {
		rows, err := tx.QueryContext(ctx, `SELECT payload FROM events WHERE session_id = ? AND kind = ? AND instr(payload, ?) > 0`, id, q.Kind, q.Contains)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var p []byte
			if err := rows.Scan(&p); err != nil {
				rows.Close()
				return nil, err
			}
			for _, name := range q.Names(p) {
				if !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
