-- Which process serves a session. A live holder keeps other processes from
-- running turns in (or recovering) the same session; a dead holder's lease
-- is taken over.
CREATE TABLE leases (
	session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
	holder      TEXT NOT NULL,
	acquired_at INTEGER NOT NULL
) WITHOUT ROWID;
