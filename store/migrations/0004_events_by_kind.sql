-- A session's events by kind. Opening a long session reads the kinds of
-- the events before its window's start, and the few of them whose
-- payloads it needs (prompts, pins, compactions, rewinds), from here:
-- the table's rows hold the payloads, and walking it to read their kinds
-- read the whole log from disk.
CREATE INDEX events_by_kind ON events(session_id, kind, seq);
