package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/bridle-dev/bridle/provider/scripted"
)

// TestAToolIterationCostsTwoCommits holds the turn loop to its fsync
// budget: an iteration (the model asks for a tool, the tool runs, its
// result goes back) commits twice, the answer with tool_started before
// the tool runs, then the result with the next request's
// context_assembled (docs/durability.md, "What is committed when").
func TestAToolIterationCostsTwoCommits(t *testing.T) {
	loop := func(iters int) scripted.Turn {
		var tr scripted.Turn
		for range iters {
			tr.Calls = append(tr.Calls, scripted.Call{ToolCalls: []scripted.ToolCall{{Name: "dump", Input: json.RawMessage(`{"lines":3}`)}}})
		}
		tr.Calls = append(tr.Calls, scripted.Call{Text: scripted.Chunks{"Done."}})
		return tr
	}
	short, long := loop(1), loop(5)
	short.Match, long.Match = "short", "long"
	sc := &scripted.Scenario{Turns: []scripted.Turn{{Match: "warm", Calls: []scripted.Call{{Text: scripted.Chunks{"Hi."}}}}, short, long}}
	m, _ := newTestManager(t, sc)
	ctx := context.Background()
	info, err := m.New(ctx, NewParams{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Get(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The first prompt pins the model and the title: commits of its own.
	if _, err := prompt(t, s, "warm"); err != nil {
		t.Fatal(err)
	}
	cost := func(text string) int64 {
		t.Helper()
		before := m.cfg.Store.Commits()
		if stop, err := prompt(t, s, text); err != nil || stop != StopEndTurn {
			t.Fatalf("prompt %q: %s, %v", text, stop, err)
		}
		return m.cfg.Store.Commits() - before
	}
	one, five := cost("short"), cost("long")
	if per := (five - one) / 4; per != 2 || (five-one)%4 != 0 {
		t.Fatalf("1 iteration: %d commits, 5 iterations: %d; want 2 per iteration", one, five)
	}
	// The log holds every event, in order, with no gap in the seqs.
	recs, err := m.cfg.Store.Events(ctx, s.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	evs := s.Events()
	if len(recs) != len(evs) {
		t.Fatalf("%d events on disk, %d in the session", len(recs), len(evs))
	}
	for i, r := range recs {
		if r.Seq != evs[i].Seq || r.Kind != string(evs[i].Kind()) || r.Seq != int64(i+1) {
			t.Fatalf("event %d: disk %d %s, session %d %s", i, r.Seq, r.Kind, evs[i].Seq, evs[i].Kind())
		}
	}
}
