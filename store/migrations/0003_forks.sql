-- A fork is a session whose history is another's up to a point: its log
-- reads the parent's events through fork_through (shared, not copied),
-- then its own, numbered from fork_through + 1.
ALTER TABLE sessions ADD COLUMN fork_of TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN fork_through INTEGER NOT NULL DEFAULT 0;
