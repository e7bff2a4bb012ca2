package session

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/store"
)

// A live session holds its log as its window needs it. The events before
// the window's start (the latest compaction's Through, the session's
// cut) are stubs (event.Stub): their kind and seq, and for the latest
// model calls the two numbers the usage correction reads (a stub's time
// and count are not read when the session is loaded, but for the
// prompts' and those calls'; stubs.go reads them). The model
// never sees them again, and a long session would otherwise hold every
// output it ever read. Kinds something reads from the whole log (the
// pins, standing answers, rewinds: event.Facts.Kept) and the first prompt
// the model sees stay whole. What needs an old event's payload (a replay,
// a rewind, read_artifact, a compaction's plan, what the model has seen)
// reads it from the store (eachWhole). A subagent's session is never
// stubbed: its parent reads its whole log when the task call ends.

func decodeRecord(r store.Record) (event.Event, error) {
	p, err := event.Decode(event.Kind(r.Kind), r.Payload)
	if err != nil {
		return event.Event{}, fmt.Errorf("event %d: %w", r.Seq, err)
	}
	return event.Event{Seq: r.Seq, Time: msTime(r.CreatedAt), Tokens: r.Tokens, Payload: p}, nil
}

// link is one session's part of a log: a fork's log is its parent's
// events through the fork's point, then its own.
type link struct {
	id string
	// through bounds the seqs read from the session (0: to its end).
	through int64
}

// chain returns the sessions whose events make up session id's log, in
// log order: a fork's parent (and the parent's own parents) through the
// fork's point, then id's own events.
func (m *Manager) chain(ctx context.Context, id string) ([]link, error) {
	var links []link
	var through int64
	for at := id; ; {
		row, err := m.cfg.Store.Session(ctx, at)
		if err != nil {
			if at != id {
				return nil, fmt.Errorf("session %s is a fork of %s: %w", id, at, err)
			}
			return nil, err
		}
		links = append(links, link{id: at, through: through})
		if row.ForkOf == "" {
			break
		}
		if through == 0 || row.ForkThrough < through {
			through = row.ForkThrough
		}
		at = row.ForkOf
	}
	slices.Reverse(links)
	return links, nil
}

// loadBatch is how many records the reader hands a decoder at a time, or
// fewer when their payloads reach batchBytes: a batch of long outputs
// must not be what a replay holds. loadQueue is how many batches wait,
// for a decoder and for the reader's caller.
const (
	loadBatch  = 512
	batchBytes = 256 << 10
	loadQueue  = 4
)

// loadJob is one batch of records on its way to decoded events.
type loadJob struct {
	recs []store.Record
	out  []event.Event
	err  error
	done chan struct{}
}

// stream reads the events of links with seq in (r.After, r.Through] of
// r.Kinds and hands them to fn in log order, a batch at a time. Reading a
// long log from SQLite takes about a third of the time and decoding the
// rest, so one goroutine reads while the others decode batches, and each
// raw record is dropped once decoded: nothing is held once fn returns.
func (m *Manager) stream(ctx context.Context, links []link, r store.Range, fn func([]event.Event) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// ordered carries every job in log order to the collector below;
	// jobs carries the same jobs to whichever decoder is free.
	ordered := make(chan *loadJob, loadQueue)
	jobs := make(chan *loadJob, loadQueue)
	readErr := make(chan error, 1)
	go func() {
		defer close(ordered)
		defer close(jobs)
		send := func(j *loadJob) error {
			for _, ch := range []chan *loadJob{ordered, jobs} {
				select {
				case ch <- j:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}
		j := &loadJob{done: make(chan struct{})}
		size := 0
		add := func(rec store.Record) error {
			j.recs = append(j.recs, rec)
			if size += len(rec.Payload); len(j.recs) < loadBatch && size < batchBytes {
				return nil
			}
			full := j
			j, size = &loadJob{done: make(chan struct{})}, 0
			return send(full)
		}
		err := m.eachRecord(ctx, links, r, add)
		if err == nil && len(j.recs) > 0 {
			err = send(j)
		}
		readErr <- err
	}()
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for j := range jobs {
				j.decode()
				close(j.done)
			}
		}()
	}
	var fnErr error
	for j := range ordered {
		select {
		case <-j.done:
		case <-ctx.Done():
			// The reader stopped before handing this job to a decoder.
			continue
		}
		if fnErr == nil && j.err != nil {
			fnErr = j.err
		}
		if fnErr == nil {
			fnErr = fn(j.out)
		}
		j.out = nil
		if fnErr != nil {
			cancel() // the reader stops, and the decoders drain
		}
	}
	if err := <-readErr; err != nil && fnErr == nil {
		return err
	}
	return fnErr
}

// decode makes the job's events.
func (j *loadJob) decode() {
	j.out = make([]event.Event, len(j.recs))
	for i, r := range j.recs {
		if j.out[i], j.err = decodeRecord(r); j.err != nil {
			break
		}
	}
	j.recs = nil
}

// eachStored calls fn with each stored record of the session's log in r
// (a fork's from its parent's), in order, on the caller's goroutine.
func (s *Session) eachStored(ctx context.Context, r store.Range, fn func(store.Record) error) error {
	links, err := s.m.chain(ctx, s.row.ID)
	if err != nil {
		return err
	}
	return s.m.eachRecord(ctx, links, r, fn)
}

// eachRecord calls fn with each stored record of the log links make up in
// r, in order.
func (m *Manager) eachRecord(ctx context.Context, links []link, r store.Range, fn func(store.Record) error) error {
	for _, l := range links {
		lr := r
		if l.through > 0 && (lr.Through == 0 || l.through < lr.Through) {
			lr.Through = l.through
		}
		if lr.Through > 0 && lr.Through <= lr.After {
			continue
		}
		if err := m.cfg.Store.EachEventIn(ctx, l.id, lr, fn); err != nil {
			return err
		}
	}
	return nil
}

// loadEvents reads and decodes a session's log whole: a subagent's, and
// what reads a log once (a child's edits, tests).
func (m *Manager) loadEvents(ctx context.Context, id string) ([]event.Event, error) {
	l, err := m.readLog(ctx, id, false)
	return l.events, err
}

// loaded is a session's log as a live session holds it: its events up
// to cut (the window's start) are stubs, but for what stubbable keeps.
type loaded struct {
	events []event.Event
	cut    int64
}

// loadLog reads a session's log as a live session holds it.
func (m *Manager) loadLog(ctx context.Context, id string) (loaded, error) {
	return m.readLog(ctx, id, !m.keepWhole)
}

func (m *Manager) readLog(ctx context.Context, id string, stubs bool) (loaded, error) {
	links, err := m.chain(ctx, id)
	if err != nil {
		return loaded{}, err
	}
	var l loaded
	if stubs {
		row, err := m.cfg.Store.Session(ctx, id)
		if err != nil {
			return loaded{}, err
		}
		if row.ParentID == "" {
			if l.cut, err = m.windowStart(ctx, links); err != nil {
				return loaded{}, fmt.Errorf("session %s: %w", id, err)
			}
		}
	}
	if l.cut > 0 {
		if l.events, err = m.readStubbed(ctx, links, l.cut); err != nil {
			return loaded{}, fmt.Errorf("session %s: %w", id, err)
		}
		return l, nil
	}
	// Seqs start at 1 and have no gaps: the last is the count.
	last, err := m.cfg.Store.LastSeq(ctx, id)
	if err != nil {
		return loaded{}, err
	}
	l.events = make([]event.Event, 0, withRoom(int(last)))
	err = m.stream(ctx, links, store.Range{}, func(b []event.Event) error {
		l.events = append(l.events, b...)
		return nil
	})
	if err != nil {
		return loaded{}, fmt.Errorf("session %s: %w", id, err)
	}
	return l, nil
}

// windowStart is where the window of the log links make up starts: the
// Through of its latest compaction that no rewind went back over (0: it
// has none). It reads the log's compactions and rewinds backwards from
// the end, and stops at that compaction.
func (m *Manager) windowStart(ctx context.Context, links []link) (int64, error) {
	undone := map[int64]bool{}
	var ranges [][2]int64
	var cut int64
	for i := len(links) - 1; i >= 0 && cut == 0; i-- {
		r := store.Range{Through: links[i].through, Kinds: []string{string(event.KindCompaction), string(event.KindRewound)}, Backwards: true}
		err := m.cfg.Store.EachEventIn(ctx, links[i].id, r, func(rec store.Record) error {
			e, err := decodeRecord(rec)
			if err != nil {
				return err
			}
			switch v := e.Payload.(type) {
			case event.Rewound:
				// As rewoundRanges reads them: an undo names the rewind it
				// takes back, and comes after it.
				if v.Undoes != 0 {
					undone[v.Undoes] = true
				} else if !undone[e.Seq] {
					ranges = append(ranges, [2]int64{v.From, e.Seq})
				}
			case event.Compaction:
				if !inRanges(ranges, e.Seq) {
					cut = v.Through
					return store.ErrStop
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return cut, nil
}

// withRoom is the capacity a log of n events is given, so that the
// events appended next do not copy it (a growing slice is copied whole:
// at 100,000 events, 5.6 MB more for every ~25,000 appended).
func withRoom(n int) int { return n + n/8 + 64 }

// compacted returns the window's new start when events hold a
// compaction (the latest one's Through).
func compacted(events []event.Event) (int64, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if c, ok := events[i].Payload.(event.Compaction); ok {
			return c.Through, true
		}
	}
	return 0, false
}

// eachWhole calls fn with each event of events (the session's log, or a
// view of it) with seq in (after, through], in order, the stubs of kinds
// (none: of every kind) read whole from the store.
func (s *Session) eachWhole(ctx context.Context, events []event.Event, after, through int64, kinds []event.Kind, fn func(event.Event) error) error {
	events = events[sort.Search(len(events), func(i int) bool { return events[i].Seq > after }):]
	wanted := func(e event.Event) bool {
		st, ok := e.Payload.(*event.Stub)
		return ok && (len(kinds) == 0 || slices.Contains(kinds, st.Of))
	}
	// The stored events to read: from the first stub wanted to the last.
	first, last := -1, -1
	for i, e := range events {
		if e.Seq > through {
			break
		}
		if wanted(e) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	i := 0
	// hand hands on, as they are, the events before seq before, or all
	// (through) when last.
	hand := func(before int64, last bool) error {
		for ; i < len(events) && events[i].Seq <= through && (last || events[i].Seq < before); i++ {
			if err := fn(events[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if first >= 0 {
		links, err := s.m.chain(ctx, s.row.ID)
		if err != nil {
			return err
		}
		names := make([]string, len(kinds))
		for k, kind := range kinds {
			names[k] = string(kind)
		}
		r := store.Range{After: events[first].Seq - 1, Through: events[last].Seq, Kinds: names}
		err = s.m.stream(ctx, links, r, func(b []event.Event) error {
			for _, e := range b {
				if err := hand(e.Seq, false); err != nil {
					return err
				}
				// The log's event of that seq (a view may not have it): the
				// stored one in place of its stub.
				if i < len(events) && events[i].Seq == e.Seq {
					if !wanted(events[i]) {
						e = events[i]
					}
					i++
					if err := fn(e); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read session %s's earlier events: %w", s.row.ID, err)
		}
	}
	return hand(0, true)
}

// wholeLog is the session's committed log with the stubs of kinds (none:
// of every kind) read whole from the store, for what reads old payloads
// (a rewind's plan, the prompts to rewind to).
func (s *Session) wholeLog(ctx context.Context, kinds ...event.Kind) ([]event.Event, error) {
	events := s.Events()
	out := make([]event.Event, 0, len(events))
	err := s.eachWhole(ctx, events, 0, lastSeq(events), kinds, func(e event.Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Log returns the session's committed log, every event whole (the
// events the session holds as stubs are read from the store).
func (s *Session) Log(ctx context.Context) ([]event.Event, error) { return s.wholeLog(ctx) }

// restart reads the log again, with stubs up to where the window starts
// now: a rewind may have moved that start (back, to a compaction before
// the one it went back over, or forward, when it was an undo) or made
// another prompt the first the model sees. A session with no compaction
// has no stubs, and nothing to do.
func (s *Session) restart(ctx context.Context) error {
	events := s.Events()
	if s.row.ParentID != "" || !slices.ContainsFunc(events, func(e event.Event) bool { return e.Kind() == event.KindCompaction }) {
		return nil
	}
	l, err := s.m.loadLog(ctx, s.row.ID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.held) > 0 || lastSeq(l.events) != lastSeq(s.events) {
		return fmt.Errorf("the log grew while it was read (%d events, %d read)", lastSeq(s.events), lastSeq(l.events))
	}
	s.events, s.cut, s.visibleN = l.events, l.cut, -1
	s.memo.Reset()
	return nil
}

func lastSeq(events []event.Event) int64 {
	if len(events) == 0 {
		return 0
	}
	return events[len(events)-1].Seq
}
