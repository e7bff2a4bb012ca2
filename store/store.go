// Package store keeps sessions and their append-only event logs in SQLite.
//
// It knows SQL and nothing about models or the protocol: an event is a
// kind, an opaque payload and a token count. All writes go through one
// writer goroutine per database, which commits concurrent appends together
// (group commit); a write has reached the disk (WAL, synchronous=FULL)
// when Append returns, so callers may start the effect it announces.
package store

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

//go:embed migrations/*.sql
var migrations embed.FS

// ErrNotFound is returned for a session that does not exist.
var ErrNotFound = errors.New("not found")

// Store is an open database.
type Store struct {
	path   string
	read   *sql.DB
	write  *sql.DB
	writes chan *writeReq
	done   chan struct{}

	mu     sync.RWMutex // guards closed against sends racing Close
	closed bool

	insertEvent *sql.Stmt // prepared once on the writer connection

	// failAt and appended inject a full disk for tests (FailAppendAt).
	failAt, appended atomic.Int64
	// commits counts the transactions committed (Commits).
	commits atomic.Int64
}

// Commits is how many write transactions the Store has committed since
// Open. Each is an fsync (synchronous=FULL), the main cost of a write, so
// tests count them to hold the turn loop to its budget.
func (s *Store) Commits() int64 { return s.commits.Load() }

// Open opens (creating if needed) the database at path, migrates an older
// schema, and refuses one written by a newer bridle.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("no database path given")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the data directory for %s: %w", path, err)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)"
	write, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxIdleTime(0)
	s := &Store{path: path, write: write, writes: make(chan *writeReq, 256), done: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		write.Close()
		return nil, err
	}
	if s.insertEvent, err = write.PrepareContext(ctx, `INSERT INTO events (session_id, seq, kind, payload, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?)`); err != nil {
		write.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	read, err := sql.Open("sqlite", dsn+"&_pragma=query_only(ON)")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	read.SetMaxOpenConns(4)
	s.read = read
	go s.writer()
	return s, nil
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Close stops the writer after pending writes and closes the database.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.writes)
	s.mu.Unlock()
	<-s.done
	return errors.Join(s.insertEvent.Close(), s.read.Close(), s.write.Close())
}

// SchemaVersion is the newest schema this bridle knows.
func SchemaVersion() int {
	names, _ := fs.Glob(migrations, "migrations/*.sql")
	return len(names)
}

func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open database %s: %w", s.path, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("database %s: %w", s.path, err)
	}
	var have int
	err = conn.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&have)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := conn.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return fmt.Errorf("database %s: %w", s.path, err)
		}
	} else if err != nil {
		return fmt.Errorf("database %s: read schema version: %w", s.path, err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	if have > len(names) {
		return fmt.Errorf("database %s was written by a newer bridle (schema version %d; this bridle knows up to %d): upgrade bridle, or point --db or BRIDLE_DB at another file",
			s.path, have, len(names))
	}
	for i := have; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", s.path, err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s to schema version %d (%s): %w", s.path, i+1, filepath.Base(names[i]), err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, i+1); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s: %w", s.path, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate %s: %w", s.path, err)
		}
	}
	return nil
}

// Session is a session's identity and pins.
type Session struct {
	ID             string
	Cwd            string
	AdditionalDirs []string
	Model          string
	Mode           string
	ParentID       string
	Title          string
	CreatedAt      int64 // unix milliseconds
	UpdatedAt      int64
	// ForkOf names the session a fork was made from; its log is that
	// session's events through ForkThrough, then its own.
	ForkOf      string
	ForkThrough int64
}

// Record is one stored event.
type Record struct {
	Seq       int64
	Kind      string
	Payload   []byte
	Tokens    int
	CreatedAt int64 // unix milliseconds
	// Key, when set, also records (Key, Kind) in the idempotency index in
	// the same transaction; a second record of the same pair fails.
	Key string
}

// Session returns one session.
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	row := s.read.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id)
	sess, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return sess, err
}

// ListOptions filters and pages Sessions.
type ListOptions struct {
	Cwd string // only sessions in this directory, if set
	// Children includes subagent sessions.
	Children bool
	// Before returns sessions updated before this cursor (from NextCursor).
	Before string
	Limit  int
}

// Sessions lists sessions, most recently updated first. The returned
// cursor is empty when there are no more.
func (s *Store) Sessions(ctx context.Context, o ListOptions) ([]Session, string, error) {
	var where []string
	var args []any
	if o.Cwd != "" {
		where = append(where, "cwd = ?")
		args = append(args, o.Cwd)
	}
	if !o.Children {
		where = append(where, "parent_id IS NULL")
	}
	if o.Before != "" {
		at, id, ok := strings.Cut(o.Before, "/")
		ms, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil {
			return nil, "", fmt.Errorf("invalid cursor %q: pass back the nextCursor of an earlier list", o.Before)
		}
		where = append(where, "(updated_at < ? OR (updated_at = ? AND id < ?))")
		args = append(args, ms, ms, id)
	}
	q := `SELECT ` + sessionCols + ` FROM sessions`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := o.Limit
	if limit <= 0 {
		limit = 1 << 30
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list sessions: %w", err)
	}
	var next string
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = fmt.Sprintf("%d/%s", last.UpdatedAt, last.ID)
	}
	return out, next, nil
}

// Events returns a session's events with seq > after, in order.
func (s *Store) Events(ctx context.Context, sessionID string, after int64) ([]Record, error) {
	var out []Record
	err := s.EachEvent(ctx, sessionID, after, func(r Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// EachEvent calls fn with each of a session's events with seq > after, in
// order, holding none of them: a long log is read without being held
// whole. An error from fn stops the reading and is returned as it is.
func (s *Store) EachEvent(ctx context.Context, sessionID string, after int64, fn func(Record) error) error {
	return s.EachEventIn(ctx, sessionID, Range{After: after}, fn)
}

// Range selects part of a session's log: the events with seq in (After,
// Through] (Through 0: to the end) of the given kinds (none: every kind),
// read backwards when Backwards is set.
type Range struct {
	After, Through int64
	Kinds          []string
	Backwards      bool
	// From hands fn only the part of each payload from the first
	// occurrence of From on (nil when it has none): a reader that wants
	// one member of long payloads is not handed the rest (SQLite cuts
	// it, and nothing is copied).
	From []byte
}

// EachEventIn is EachEvent over a part of the log. fn may stop the
// reading by returning ErrStop (EachEventIn then returns nil): the rest
// is never read.
func (s *Store) EachEventIn(ctx context.Context, sessionID string, r Range, fn func(Record) error) error {
	// The payload column's expression, and its arguments in the order of
	// the query's text.
	cols, args := `payload`, []any{}
	if r.From != nil {
		cols, args = `CASE WHEN instr(payload, ?) > 0 THEN substr(payload, instr(payload, ?)) END`, []any{r.From, r.From}
	}
	// Of some kinds: through the index of kinds, which SQLite's planner
	// (with no statistics) passes over for the primary key's order, and
	// then walks every row of the session, payloads and all.
	from := `events`
	if len(r.Kinds) > 0 {
		from = `events INDEXED BY events_by_kind`
	}
	q := `SELECT seq, kind, ` + cols + `, tokens, created_at FROM ` + from + ` WHERE session_id = ? AND seq > ?`
	args = append(args, sessionID, r.After)
	if r.Through > 0 {
		q += ` AND seq <= ?`
		args = append(args, r.Through)
	}
	if len(r.Kinds) > 0 {
		q += ` AND kind IN (?` + strings.Repeat(`, ?`, len(r.Kinds)-1) + `)`
		for _, k := range r.Kinds {
			args = append(args, k)
		}
	}
	q += ` ORDER BY seq`
	if r.Backwards {
		q += ` DESC`
	}
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read events of %s: %w", sessionID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var rec Record
		if err := rows.Scan(&rec.Seq, &rec.Kind, &rec.Payload, &rec.Tokens, &rec.CreatedAt); err != nil {
			return fmt.Errorf("read events of %s: %w", sessionID, err)
		}
		if err := fn(rec); errors.Is(err, ErrStop) {
			return nil
		} else if err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read events of %s: %w", sessionID, err)
	}
	return nil
}

// ErrStop, returned by the function EachEventIn calls, stops the reading
// without an error.
var ErrStop = errors.New("stop reading")

// SeqsByKind returns the seqs of a session's events with seq in (after,
// through] (through 0: to the end), by kind, each kind's in order. It
// reads the index of kinds alone, never the events: a long log's kinds
// are a few megabytes there and its whole size in the table. Each kind
// comes as one row (the driver's cost is per row: 100,000 rows of two
// columns cost twice what 10 long ones do).
func (s *Store) SeqsByKind(ctx context.Context, sessionID string, after, through int64) (map[string][]int64, error) {
	q, args := `SELECT kind, group_concat(seq) FROM events INDEXED BY events_by_kind WHERE session_id = ? AND seq > ?`, []any{sessionID, after}
	if through > 0 {
		q += ` AND seq <= ?`
		args = append(args, through)
	}
	rows, err := s.read.QueryContext(ctx, q+` GROUP BY kind`, args...)
	if err != nil {
		return nil, fmt.Errorf("read the kinds of %s's events: %w", sessionID, err)
	}
	defer rows.Close()
	out := map[string][]int64{}
	for rows.Next() {
		var kind string
		var list []byte
		if err := rows.Scan(&kind, &list); err != nil {
			return nil, fmt.Errorf("read the kinds of %s's events: %w", sessionID, err)
		}
		seqs := make([]int64, 0, bytes.Count(list, []byte(","))+1)
		for f := range bytes.SplitSeq(list, []byte(",")) {
			n, err := strconv.ParseInt(string(f), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("read the kinds of %s's events: seq %q: %w", sessionID, f, err)
			}
			seqs = append(seqs, n)
		}
		// group_concat's order is the index's (kind, seq) walk, which
		// SQLite does not promise.
		slices.Sort(seqs)
		out[kind] = seqs
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the kinds of %s's events: %w", sessionID, err)
	}
	return out, nil
}

// LatestOfModel returns the payload of the latest event of kind in the
// most recently used sessions (but except) pinned to model, or nil when
// none has one. It looks at a few sessions, newest first, each read
// backwards from its end.
func (s *Store) LatestOfModel(ctx context.Context, model, except, kind string) ([]byte, error) {
	rows, err := s.read.QueryContext(ctx,
		`SELECT id FROM sessions WHERE model = ? AND id <> ? ORDER BY updated_at DESC LIMIT 5`, model, except)
	if err != nil {
		return nil, fmt.Errorf("read sessions of %s: %w", model, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read sessions of %s: %w", model, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		var payload []byte
		err := s.read.QueryRowContext(ctx,
			`SELECT payload FROM events WHERE session_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1`, id, kind).Scan(&payload)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read events of %s: %w", id, err)
		}
		return payload, nil
	}
	return nil, nil
}

// LastSeq returns the seq of a session's last event, 0 when it has none.
func (s *Store) LastSeq(ctx context.Context, sessionID string) (int64, error) {
	var seq int64
	if err := s.read.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?`, sessionID).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read events of %s: %w", sessionID, err)
	}
	return seq, nil
}

// Recorded reports the seq of the (key, kind) idempotency record, or 0.
func (s *Store) Recorded(ctx context.Context, sessionID, key, kind string) (int64, error) {
	var seq int64
	err := s.read.QueryRowContext(ctx,
		`SELECT seq FROM idempotency WHERE session_id = ? AND key = ? AND kind = ?`,
		sessionID, key, kind).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read idempotency record %s: %w", key, err)
	}
	return seq, nil
}

// MaxTitle bounds a session's title, in characters. Titles are written
// at most this long and read back at most this long: a database written
// by an older bridle may hold fork titles that doubled at every level of
// forking (hundreds of megabytes), and reading one whole into every
// session/list and load cost gigabytes. substr keeps it in SQLite.
const MaxTitle = 80

var sessionCols = fmt.Sprintf(`id, cwd, additional_dirs, model, mode, COALESCE(parent_id, ''), substr(title, 1, %d), created_at, updated_at, fork_of, fork_through`, MaxTitle)

// clipTitle cuts a title to MaxTitle characters.
func clipTitle(t string) string {
	n := 0
	for i := range t {
		if n == MaxTitle {
			return t[:i]
		}
		n++
	}
	return t
}

type scanner interface{ Scan(...any) error }

func scanSession(row scanner) (Session, error) {
	var s Session
	var dirs string
	if err := row.Scan(&s.ID, &s.Cwd, &dirs, &s.Model, &s.Mode, &s.ParentID, &s.Title, &s.CreatedAt, &s.UpdatedAt, &s.ForkOf, &s.ForkThrough); err != nil {
		return Session{}, err
	}
	s.AdditionalDirs = splitDirs(dirs)
	return s, nil
}
