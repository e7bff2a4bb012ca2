-- Sessions hold identity and pins; events are the state.
CREATE TABLE sessions (
	id              TEXT PRIMARY KEY,
	cwd             TEXT NOT NULL,
	additional_dirs TEXT NOT NULL DEFAULT '[]',
	model           TEXT NOT NULL,
	mode            TEXT NOT NULL,
	parent_id       TEXT REFERENCES sessions(id) ON DELETE CASCADE,
	title           TEXT NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
CREATE INDEX sessions_by_cwd ON sessions(cwd, updated_at);
CREATE INDEX sessions_by_parent ON sessions(parent_id);

CREATE TABLE events (
	session_id TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	kind       TEXT NOT NULL,
	payload    BLOB NOT NULL,
	tokens     INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- The log is append-only: an event is never changed, and removed only
-- with its whole session (the session row goes first).
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: an event cannot be changed');
END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = OLD.session_id)
BEGIN
	SELECT RAISE(ABORT, 'events are append-only: delete the whole session instead');
END;

-- Idempotency records: one row per (call key, phase). A tool's result is
-- committed in the same transaction as its row here, and the primary key
-- makes a second result for the same call impossible.
CREATE TABLE idempotency (
	session_id TEXT NOT NULL,
	key        TEXT NOT NULL,
	kind       TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	PRIMARY KEY (session_id, key, kind)
) WITHOUT ROWID;
