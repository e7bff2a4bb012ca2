package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/tools"
)

// failAt runs sc's first prompt cleanly in one manager to learn where the
// first event of kind is, then returns a fresh manager whose store fails
// the commit that carries it, and a session in it.
func failAt(t *testing.T, sc *scripted.Scenario, first string, kind event.Kind) (*Manager, *recorder, *Session) {
	t.Helper()
	ctx := context.Background()
	clean, _ := newTestManager(t, sc)
	clean.cfg.Tools = []tools.Tool{dump{}, poke{}}
	info, _ := clean.New(ctx, NewParams{Cwd: t.TempDir()})
	s, _ := clean.Get(ctx, info.ID)
	if _, err := prompt(t, s, first); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, e := range s.Events() {
		if e.Kind() == kind {
			n = i + 1
			break
		}
	}
	if n == 0 {
		t.Fatalf("the clean run has no %s", kind)
	}
	m, rec := newTestManager(t, sc)
	m.cfg.Tools = []tools.Tool{dump{}, poke{}}
	m.cfg.Store.FailAppendAt(int64(n))
	info, _ = m.New(ctx, NewParams{Cwd: t.TempDir()})
	s, _ = m.Get(ctx, info.ID)
	return m, rec, s
}

func kindsOf(events []event.Event) string {
	var k []string
	for _, e := range events {
		k = append(k, string(e.Kind()))
	}
	return strings.Join(k, " ")
}

func TestAFailedResultCommitIsMendedOnTheNextUse(t *testing.T) {
	sc := &scripted.Scenario{Turns: []scripted.Turn{
		{Match: "read", Calls: []scripted.Call{
			{ToolCalls: []scripted.ToolCall{{Name: "dump", Input: json.RawMessage(`{"lines":2}`)}}},
			{Text: scripted.Chunks{"Read."}},
		}},
		{Match: "next", Calls: []scripted.Call{{Text: scripted.Chunks{"Next."}}}},
	}}
	ctx := context.Background()
	m, rec, s := failAt(t, sc, "read", event.KindToolResult)
	_, err := prompt(t, s, "read")
	if !errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("err = %v, want ErrNotRecorded from a full disk", err)
	}
	var last *acp.ToolCallUpdate
	for _, u := range rec.updates {
		if u.ToolCallUpdate != nil {
			last = u.ToolCallUpdate
		}
	}
	if last == nil || last.Status == nil || *last.Status != acp.ToolCallStatusFailed {
		t.Fatalf("the card's last update: %+v, want failed", last)
	}
	// Any use of the session closes the turn first; the read runs again.
	if got, err := m.Get(ctx, s.ID()); err != nil || got != s {
		t.Fatalf("Get after the failed commit: %v", err)
	}
	evs := s.Events()
	if k := kindsOf(evs); !strings.HasSuffix(k, "tool_started tool_result interrupted turn_finished") {
		t.Fatalf("log after the mend: %s", k)
	}
	r := evs[len(evs)-3].Payload.(event.ToolResult)
	if r.Status != "completed" || !strings.HasPrefix(r.Output, "(run again: bridle could not record its first result") {
		t.Fatalf("the read's result: %s %q", r.Status, r.Output)
	}
	if why := evs[len(evs)-2].Payload.(event.Interrupted).Reason; why != "write_failed" {
		t.Fatalf("interrupted reason %q", why)
	}
	if stop, err := prompt(t, s, "next"); err != nil || stop != StopEndTurn {
		t.Fatalf("the next prompt: %s, %v", stop, err)
	}
}

func TestAFailedAnswerCommitIsWithdrawnByTheNextPrompt(t *testing.T) {
	sc := &scripted.Scenario{Turns: []scripted.Turn{
		{Match: "poke", Calls: []scripted.Call{
			{ToolCalls: []scripted.ToolCall{{Name: "poke", Input: json.RawMessage(`{}`)}}},
			{Text: scripted.Chunks{"Poked."}},
		}},
		{Match: "next", Calls: []scripted.Call{{Text: scripted.Chunks{"Next."}}}},
	}}
	// The user's answer cannot be recorded: the question is pending again
	// once space is back, and a prompt withdraws it rather than opening a
	// turn on top of the unfinished one.
	_, _, s := failAt(t, sc, "poke", event.KindApprovalGranted)
	if _, err := prompt(t, s, "poke"); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("err = %v, want ErrNotRecorded", err)
	}
	if stop, err := prompt(t, s, "next"); err != nil || stop != StopEndTurn {
		t.Fatalf("the next prompt: %s, %v", stop, err)
	}
	k := kindsOf(s.Events())
	if !strings.Contains(k, "approval_request tool_result interrupted turn_finished user_message") || strings.Contains(k, "tool_started") {
		t.Fatalf("log: %s", k)
	}
	for _, e := range s.Events() {
		if v, ok := e.Payload.(event.Interrupted); ok && v.Reason != "write_failed" {
			t.Fatalf("interrupted reason %q", v.Reason)
		}
	}
}
