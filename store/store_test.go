package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sub", "bridle.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newSession(t testing.TB, s *Store, id string) {
	t.Helper()
	_, err := s.CreateSession(context.Background(), Session{ID: id, Cwd: "/w", Model: "scripted/x", Mode: "ask"},
		Record{Kind: "session_started", Payload: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAppendAssignsSeqInOrder(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	newSession(t, s, "a")
	recs, err := s.Append(ctx, "a", Record{Kind: "user_message", Payload: []byte(`{"x":1}`), Tokens: 3},
		Record{Kind: "assistant_message", Payload: []byte(`{"x":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].Seq != 2 || recs[1].Seq != 3 {
		t.Fatalf("seqs = %d, %d; want 2, 3", recs[0].Seq, recs[1].Seq)
	}
	all, err := s.Events(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range all {
		kinds = append(kinds, fmt.Sprintf("%d:%s", r.Seq, r.Kind))
	}
	if got := strings.Join(kinds, " "); got != "1:session_started 2:user_message 3:assistant_message" {
		t.Fatalf("events = %s", got)
	}
	if all[1].Tokens != 3 {
		t.Fatalf("tokens = %d, want 3", all[1].Tokens)
	}
	tail, _ := s.Events(ctx, "a", 2)
	if len(tail) != 1 || tail[0].Seq != 3 {
		t.Fatalf("events after 2 = %+v", tail)
	}
}

func TestConcurrentAppendsKeepEverySessionDense(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	const sessions, each = 4, 50
	for i := range sessions {
		newSession(t, s, fmt.Sprint("s", i))
	}
	var wg sync.WaitGroup
	for i := range sessions {
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Append(ctx, fmt.Sprint("s", i), Record{Kind: "k", Payload: []byte(`{}`)}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	for i := range sessions {
		recs, err := s.Events(ctx, fmt.Sprint("s", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != each+1 {
			t.Fatalf("session %d has %d events, want %d", i, len(recs), each+1)
		}
		for j, r := range recs {
			if r.Seq != int64(j+1) {
				t.Fatalf("session %d: event %d has seq %d", i, j, r.Seq)
			}
		}
	}
}

func TestEventsCannotBeChangedOrDeleted(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	newSession(t, s, "a")
	for _, q := range []string{
		`UPDATE events SET payload = 'x' WHERE session_id = 'a'`,
		`DELETE FROM events WHERE session_id = 'a'`,
	} {
		err := s.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, q)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want append-only refusal", q, err)
		}
	}
}

func TestDuplicateIdempotencyRecordIsRefused(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	newSession(t, s, "a")
	if _, err := s.Append(ctx, "a", Record{Kind: "tool_result", Payload: []byte(`{}`), Key: "a/3/0"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Append(ctx, "a", Record{Kind: "tool_result", Payload: []byte(`{}`), Key: "a/3/0"})
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second result: err = %v, want ErrDuplicate", err)
	}
	recs, _ := s.Events(ctx, "a", 0)
	if len(recs) != 2 {
		t.Fatalf("%d events after a refused duplicate, want 2", len(recs))
	}
	seq, err := s.Recorded(ctx, "a", "a/3/0", "tool_result")
	if err != nil || seq != 2 {
		t.Fatalf("Recorded = %d, %v; want 2", seq, err)
	}
}

func TestDeleteSessionDropsItsEventsAndChildren(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	newSession(t, s, "parent")
	newSession(t, s, "other")
	if _, err := s.CreateSession(ctx, Session{ID: "child", Cwd: "/w", Model: "m", Mode: "ask", ParentID: "parent"},
		Record{Kind: "session_started", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if d, err := s.DeleteSession(ctx, "parent", DeleteOptions{}); err != nil || strings.Join(d.IDs, " ") != "parent child" {
		t.Fatalf("DeleteSession = %v, %v; want the parent and its child", d.IDs, err)
	}
	for _, id := range []string{"parent", "child"} {
		if _, err := s.Session(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("session %s after delete: err = %v", id, err)
		}
		if recs, _ := s.Events(ctx, id, 0); len(recs) != 0 {
			t.Errorf("session %s keeps %d events", id, len(recs))
		}
	}
	if recs, _ := s.Events(ctx, "other", 0); len(recs) != 1 {
		t.Errorf("unrelated session lost events: %d left", len(recs))
	}
	if _, err := s.DeleteSession(ctx, "parent", DeleteOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Append(ctx, "parent", Record{Kind: "k", Payload: []byte(`{}`)}); !errors.Is(err, ErrNotFound) {
		t.Errorf("append to deleted session: err = %v, want ErrNotFound", err)
	}
}

func TestSessionsPagesNewestFirst(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	for i := range 5 {
		newSession(t, s, fmt.Sprint("s", i))
		if _, err := s.Append(ctx, fmt.Sprint("s", i), Record{Kind: "k", Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := ""
	for {
		page, next, err := s.Sessions(ctx, ListOptions{Limit: 2, Before: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			got = append(got, p.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if strings.Join(got, ",") != "s4,s3,s2,s1,s0" {
		t.Fatalf("sessions = %v", got)
	}
	if _, _, err := s.Sessions(ctx, ListOptions{Before: "garbage"}); err == nil {
		t.Fatal("a malformed cursor was accepted")
	}
}

func TestNewerSchemaIsRefusedAndOlderMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	newSession(t, s, "kept")
	// Pretend a newer bridle wrote the file.
	if err := s.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = 99`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "newer bridle") || !strings.Contains(err.Error(), "upgrade bridle") {
		t.Fatalf("opening a newer database: err = %v", err)
	}

	// An older file (version 0, as before the first migration) is migrated.
	old := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite", "file:"+old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (0);`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	s2, err := Open(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	newSession(t, s2, "fresh")

	// A database of the schema before the index of kinds, with events,
	// gets the index.
	v3 := filepath.Join(t.TempDir(), "v3.db")
	s3, err := Open(ctx, v3)
	if err != nil {
		t.Fatal(err)
	}
	newSession(t, s3, "older")
	if _, err := s3.Append(ctx, "older", Record{Kind: "user_message", Payload: []byte(`{"v":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s3.do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DROP INDEX events_by_kind; UPDATE schema_version SET version = 3`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s3.Close()
	if s3, err = Open(ctx, v3); err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	kinds, err := s3.SeqsByKind(ctx, "older", 0, 0)
	if err != nil || fmt.Sprint(kinds) != "map[session_started:[1] user_message:[2]]" {
		t.Fatalf("the kinds of a migrated database's events: %v, %v", kinds, err)
	}
}

// BenchmarkAppend measures what the session pays for one commit: one
// event appended alone, in its own transaction, fsync'd
// (synchronous=FULL) before Append returns.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	newSession(b, s, "a")
	payload := []byte(`{"v":1,"text":"a typical short event payload of modest size"}`)
	b.ResetTimer()
	for range b.N {
		if _, err := s.Append(ctx, "a", Record{Kind: "assistant_message", Payload: payload, Tokens: 12}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMicroAppendBatched measures events/s when 64 events share
// one Append (one transaction): the store's throughput, not what a
// session pays per event (see BenchmarkAppend, and session's
// BenchmarkSessionAppend).
func BenchmarkMicroAppendBatched(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	newSession(b, s, "a")
	payload := []byte(`{"v":1,"text":"a typical short event payload of modest size"}`)
	const batch = 64
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		recs := make([]Record, batch)
		for j := range recs {
			recs[j] = Record{Kind: "assistant_message", Payload: payload, Tokens: 12}
		}
		if _, err := s.Append(ctx, "a", recs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendConcurrent measures single-event appends from many
// goroutines, which the writer folds into shared commits.
func BenchmarkAppendConcurrent(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	newSession(b, s, "a")
	payload := []byte(`{"v":1,"text":"a typical short event payload of modest size"}`)
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Append(ctx, "a", Record{Kind: "k", Payload: payload}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func TestFailAppendAtFailsOneAppendAsAFullDisk(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	s.FailAppendAt(4) // session_started is 1
	newSession(t, s, "a")
	rec := func(k string) Record { return Record{Kind: k, Payload: []byte(`{}`)} }
	if _, err := s.Append(ctx, "a", rec("user_message"), rec("context_assembled")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Append(ctx, "a", rec("assistant_message"), rec("tool_started"))
	if err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("the append carrying event 4: err = %v, want a full disk", err)
	}
	// Nothing of it was committed, and space is back.
	if all, _ := s.Events(ctx, "a", 0); len(all) != 3 {
		t.Fatalf("%d events after the failed append, want 3", len(all))
	}
	recs, err := s.Append(ctx, "a", rec("assistant_message"))
	if err != nil || recs[0].Seq != 4 {
		t.Fatalf("the next append: %+v, %v", recs, err)
	}
}

// TestTitlesAreBounded: a title is written at most MaxTitle characters,
// and one an older bridle wrote longer is read back cut, without reading
// it whole into Go.
func TestTitlesAreBounded(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	long := strings.Repeat("ü", 3*MaxTitle)
	if _, err := s.CreateSession(ctx, Session{ID: "a", Cwd: "/w", Model: "m", Mode: "ask", Title: long}); err != nil {
		t.Fatal(err)
	}
	newSession(t, s, "b")
	if err := s.UpdateSession(ctx, "b", "", "", long); err != nil {
		t.Fatal(err)
	}
	newSession(t, s, "old")
	db, err := sql.Open("sqlite", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE sessions SET title = ? WHERE id = 'old'`, strings.Repeat(`\"`, 1<<20)); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": long[:2*MaxTitle], "b": long[:2*MaxTitle], "old": strings.Repeat(`\"`, MaxTitle/2)}
	for id, title := range want {
		got, err := s.Session(ctx, id)
		if err != nil || got.Title != title {
			t.Errorf("Session(%s).Title = %q (%v), want %q", id, got.Title, err, title)
		}
	}
	list, _, err := s.Sessions(ctx, ListOptions{})
	if err != nil || len(list) != 3 {
		t.Fatalf("Sessions = %d, %v", len(list), err)
	}
	for _, got := range list {
		if got.Title != want[got.ID] {
			t.Errorf("Sessions: %s's title = %.100q, want %q", got.ID, got.Title, want[got.ID])
		}
	}
}

// TestDeleteSessionRespectsLeases: a session, or a child of it, that
// another live holder leases is not deleted; a dead holder's lease, or
// the deleter's own, does not stop it. CheckDelete, which changes
// nothing, says the same beforehand.
func TestDeleteSessionRespectsLeases(t *testing.T) {
	ctx := context.Background()
	alive := func(h string) bool { return h != "dead" }
	for _, c := range []struct {
		name, leased, holder string
		refused              bool
	}{
		{"another live process", "parent", "other", true},
		{"a child another live process runs", "child", "other", true},
		{"a child's child another live process runs", "grandchild", "other", true},
		{"a child the deleter runs", "child", "me", false},
		{"a dead process", "parent", "dead", false},
		{"the deleter itself", "parent", "me", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openTemp(t)
			newSession(t, s, "parent")
			if _, err := s.CreateSession(ctx, Session{ID: "child", Cwd: "/w", Model: "m", Mode: "ask", ParentID: "parent"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateSession(ctx, Session{ID: "grandchild", Cwd: "/w", Model: "m", Mode: "ask", ParentID: "child"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Acquire(ctx, c.leased, c.holder, alive); err != nil {
				t.Fatal(err)
			}
			o := DeleteOptions{Holder: "me", Alive: alive}
			var le *LeasedError
			err := s.CheckDelete(ctx, "parent", o)
			if got := errors.As(err, &le); got != c.refused || (got && le.SessionID != c.leased) {
				t.Fatalf("CheckDelete = %v, refused %v", err, c.refused)
			}
			if _, err := s.Session(ctx, "parent"); err != nil {
				t.Fatalf("CheckDelete deleted the session: %v", err)
			}
			d, err := s.DeleteSession(ctx, "parent", o)
			if got := errors.As(err, &le); got != c.refused || (got && le.SessionID != c.leased) {
				t.Fatalf("DeleteSession = %v, refused %v", err, c.refused)
			}
			if !c.refused && strings.Join(d.IDs, " ") != "parent child grandchild" {
				t.Fatalf("DeleteSession deleted %v, want the session and its descendants", d.IDs)
			}
			_, err = s.Session(ctx, "parent")
			if kept := err == nil; kept != c.refused {
				t.Fatalf("after the delete the session is kept: %v (%v)", kept, err)
			}
			if !c.refused {
				var n int
				s.read.QueryRowContext(ctx, `SELECT count(*) FROM leases`).Scan(&n)
				if n != 0 {
					t.Fatalf("%d leases remain", n)
				}
			}
		})
	}
}

// TestDeleteSessionReportsItsReferences: the names the deleted events
// referred to are reported, and Referenced tells those another session
// still refers to.
func TestDeleteSessionReportsItsReferences(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	a, b, c := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	msg := func(names ...string) Record {
		var p strings.Builder
		p.WriteString(`{"content":[`)
		for i, n := range names {
			if i > 0 {
				p.WriteString(",")
			}
			fmt.Fprintf(&p, `{"type":"image","uri":"img:%s"}`, n)
		}
		p.WriteString(`]}`)
		return Record{Kind: "user_message", Payload: []byte(p.String())}
	}
	newSession(t, s, "gone")
	newSession(t, s, "kept")
	if _, err := s.Append(ctx, "gone", msg(a, b), msg(a), Record{Kind: "tool_result", Payload: []byte(`"img:` + c + `"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "kept", msg(b)); err != nil {
		t.Fatal(err)
	}
	q := RefQuery{Kind: "user_message", Contains: "img:", Names: imgNames}
	d, err := s.DeleteSession(ctx, "gone", DeleteOptions{Refs: &q})
	if err != nil || strings.Join(d.Refs, " ") != a+" "+b {
		t.Fatalf("DeleteSession refs = %v, %v; want a and b (c is in another kind of event)", d.Refs, err)
	}
	used, err := s.Referenced(ctx, q, d.Refs)
	if err != nil || len(used) != 1 || !used[b] {
		t.Fatalf("Referenced = %v, %v; want b only", used, err)
	}
}

// imgNames reads the names the tests' payloads refer to: "img:" and 64
// characters.
func imgNames(p []byte) []string {
	var out []string
	for _, part := range bytes.Split(p, []byte("img:"))[1:] {
		if len(part) >= 64 && !slices.Contains(out, string(part[:64])) {
			out = append(out, string(part[:64]))
		}
	}
	return out
}

// BenchmarkReferenced is the scan a delete of a session that held images
// pays: a database of 100 sessions, each 1,000 events (a prompt with an
// image reference every 20 events, the rest 1 KB tool results).
func BenchmarkReferenced(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	big := []byte(`{"output":"` + strings.Repeat("x", 1000) + `"}`)
	for i := range 100 {
		id := fmt.Sprintf("s%03d", i)
		newSession(b, s, id)
		for j := 0; j < 1000; j += 100 {
			recs := make([]Record, 100)
			for k := range recs {
				recs[k] = Record{Kind: "tool_result", Payload: big}
				if k%20 == 0 {
					recs[k] = Record{Kind: "user_message", Payload: fmt.Appendf(nil, `{"content":[{"type":"image","uri":"img:%064x"}]}`, i*1000+j+k)}
				}
			}
			if _, err := s.Append(ctx, id, recs...); err != nil {
				b.Fatal(err)
			}
		}
	}
	q := RefQuery{Kind: "user_message", Contains: "img:", Names: imgNames}
	names := []string{fmt.Sprintf("%064x", 99020), fmt.Sprintf("%064x", 1)}
	b.ResetTimer()
	for b.Loop() {
		used, err := s.Referenced(ctx, q, names)
		if err != nil || !used[names[0]] || used[names[1]] {
			b.Fatalf("Referenced = %v, %v", used, err)
		}
	}
}

// TestClosingLeases: a holder that marks its leases as closing still
// keeps them from other live processes, which now learn it is closing;
// its own Acquire takes a lease back as before, and Release drops it.
func TestClosingLeases(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	alive := func(string) bool { return true }
	for _, id := range []string{"a", "b"} {
		newSession(t, s, id)
		if err := s.Acquire(ctx, id, "old", alive); err != nil {
			t.Fatal(err)
		}
	}
	closing := func() bool {
		t.Helper()
		err := s.Acquire(ctx, "a", "new", alive)
		var le *LeasedError
		if !errors.As(err, &le) || le.Holder != "old" {
			t.Fatalf("Acquire by another live process = %v, want a *LeasedError naming old", err)
		}
		return le.Closing
	}
	if closing() {
		t.Fatal("a lease is closing before its holder said so")
	}
	if err := s.Closing(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if err := s.Closing(ctx, "old"); err != nil { // twice: still closing, not undone
		t.Fatal(err)
	}
	if !closing() {
		t.Fatal("the lease of a closing holder is not said to be closing")
	}
	if err := s.Acquire(ctx, "b", "old", alive); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "a", "old"); err != nil {
		t.Fatal(err)
	}
	if err := s.Acquire(ctx, "a", "new", alive); err != nil {
		t.Fatalf("after the release: %v", err)
	}
}
