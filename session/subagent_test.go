package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/session/event"
	"github.com/bridle-dev/bridle/store"
)

// poke is a tool with the edit effect that changes nothing.
type poke struct{}

func (poke) Name() string        { return "poke" }
func (poke) Description() string { return "Poke." }
func (poke) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object"}`)
}
func (poke) Kind() sandbox.Kind     { return sandbox.KindEdit }
func (poke) Effect() sandbox.Effect { return sandbox.EffectEdit }
func (poke) Preview(*sandbox.Env, json.RawMessage) (sandbox.Preview, error) {
	return sandbox.Preview{Title: "poke"}, nil
}
func (poke) Run(context.Context, *sandbox.Env, json.RawMessage) sandbox.Result {
	return sandbox.Result{Output: "poked"}
}

func TestChildToolNames(t *testing.T) {
	m, _ := newTestManager(t, &scripted.Scenario{})
	m.cfg.Tools = []sandbox.Tool{dump{}, poke{}, sandbox.Remember{}}
	info, err := m.New(context.Background(), NewParams{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Get(context.Background(), info.ID)
	tests := []struct {
		mode      sandbox.Mode
		requested []string
		want      string // names, or the error's text
	}{
		{sandbox.ModeAsk, nil, "dump"},
		{sandbox.ModeAsk, []string{"dump", "poke", "dump"}, "dump poke"},
		{sandbox.ModeReadOnly, []string{"poke"}, `"poke" is not available in read-only mode`},
		{sandbox.ModeReadOnly, nil, "dump"},
		{sandbox.ModeAsk, []string{"task"}, "cannot start subagents"},
		{sandbox.ModeAsk, []string{"nope"}, `there is no tool "nope"; a subagent may have: dump, poke, remember`},
	}
	for _, tt := range tests {
		if err := s.SetMode(context.Background(), string(tt.mode)); err != nil {
			t.Fatal(err)
		}
		got, err := s.childToolNames(tt.requested)
		text := strings.Join(got, " ")
		if err != nil {
			text = err.Error()
		}
		if !strings.Contains(text, tt.want) {
			t.Errorf("%s %v: %q, want %q", tt.mode, tt.requested, text, tt.want)
		}
	}
}

func TestTaskRunsAChildSession(t *testing.T) {
	sc := &scripted.Scenario{Turns: []scripted.Turn{
		{Match: "parent", Calls: []scripted.Call{
			{ToolCalls: []scripted.ToolCall{{Name: "task", Input: json.RawMessage(`{"description":"rows","prompt":"CHILD: dump rows","tools":["dump","poke"],"max_turns":3}`)}}},
			{Text: scripted.Chunks{"Parent done."}},
		}},
		{Match: "CHILD", Calls: []scripted.Call{
			{Text: scripted.Chunks{"Dumping."}, ToolCalls: []scripted.ToolCall{{Name: "dump", Input: json.RawMessage(`{"lines":2}`)}, {Name: "poke", Input: json.RawMessage(`{}`)}}},
			{Text: scripted.Chunks{"Two rows."}},
		}},
	}}
	m, rec := newTestManager(t, sc)
	m.cfg.Tools = []sandbox.Tool{dump{}, poke{}}
	info, _ := m.New(context.Background(), NewParams{Cwd: t.TempDir()})
	s, _ := m.Get(context.Background(), info.ID)
	if stop, err := prompt(t, s, "parent"); err != nil || stop != StopEndTurn {
		t.Fatalf("stop %s, err %v", stop, err)
	}
	var st event.SubagentStarted
	var res event.ToolResult
	for _, e := range s.Events() {
		switch v := e.Payload.(type) {
		case event.SubagentStarted:
			st = v
		case event.ToolResult:
			res = v
		}
	}
	if res.Output != "Two rows." || st.MaxTurns != 3 || strings.Join(st.Tools, ",") != "dump,poke" || st.CallID != "toolu_scripted_0" {
		t.Fatalf("started %+v, result %+v", st, res)
	}
	row, err := m.cfg.Store.Session(context.Background(), st.ChildID)
	if err != nil || row.ParentID != info.ID || row.Title != "rows" {
		t.Fatalf("child row %+v, %v", row, err)
	}
	// The child is no longer live; its lease is free.
	m.mu.Lock()
	_, live := m.live[st.ChildID]
	m.mu.Unlock()
	if live {
		t.Error("the child stayed live after its task")
	}
	// poke (an edit in ask mode) was asked through the parent, on the task
	// call; the recorder allows it.
	asked := false
	for _, u := range rec.updates {
		if c := u.ToolCallUpdate; c != nil && c.ToolCallID == "call-4-0" && len(c.Content) > 0 && c.Content[0].Content != nil &&
			strings.Contains(c.Content[0].Content.Content.Text.Text, "✓ poke") {
			asked = true
		}
	}
	if !asked {
		t.Error("no progress showed the child's approved call")
	}
}

func TestOutcomes(t *testing.T) {
	said := []event.Event{
		{Payload: event.AssistantMessage{Text: "Looking."}},
		{Payload: event.AssistantMessage{Text: "Found it: 42."}},
	}
	cut := append(append([]event.Event(nil), said[:1]...), event.Event{Payload: event.Interrupted{Text: "Halfway", Reason: "cancelled"}})
	tests := []struct {
		name   string
		events []event.Event
		stop   StopReason
		err    error
		t      turn
		status string
		want   []string
	}{
		{"finished", said, StopEndTurn, nil, turn{}, "completed", []string{"Found it: 42."}},
		{"finished silent", said[:0], StopEndTurn, nil, turn{}, "completed", []string{"without a final message"}},
		{"turns spent", said, StopMaxTurnRequests, nil, turn{iters: 2, spent: true, budget: budget{Turns: 2}}, "budget_exhausted",
			[]string{"Looking.", "Found it: 42.", "budget of 2 model calls", "session ses_c"}},
		{"tokens spent", said, StopMaxTokens, nil, turn{used: 5000, spent: true, budget: budget{Tokens: 1000}}, "budget_exhausted",
			[]string{"5000 tokens of its budget of 1000"}},
		{"cancelled", cut, StopCancelled, nil, turn{}, "cancelled", []string{"Looking.", "Halfway [interrupted]", "cancelled before it finished"}},
		{"failed", said, "", errors.New("boom"), turn{}, "failed", []string{"failed: boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := outcomeOf("ses_c", tt.events, tt.stop, tt.err, &tt.t)
			if o.status != tt.status {
				t.Errorf("status %q, want %q", o.status, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(o.answer, w) {
					t.Errorf("answer %q lacks %q", o.answer, w)
				}
			}
		})
	}

	st := event.SubagentStarted{ChildID: "ses_c"}
	restarted := append(append([]event.Event(nil), said...),
		event.Event{Payload: event.ToolResult{Name: "dump", Status: "completed"}},
		event.Event{Payload: event.ToolResult{Name: "poke", Status: "unknown"}},
		event.Event{Payload: event.TurnFinished{StopReason: "interrupted"}})
	o := recoveredOutcome(st, restarted)
	if o.status != "interrupted" || !strings.Contains(o.answer, "after 2 model calls") || !strings.Contains(o.answer, "dump: completed, poke: unknown") {
		t.Errorf("recovered outcome = %+v", o)
	}
	done := append(append([]event.Event(nil), said...), event.Event{Payload: event.TurnFinished{StopReason: "end_turn"}})
	if o := recoveredOutcome(st, done); o.status != "completed" || o.answer != "Found it: 42." {
		t.Errorf("a child that finished before the restart: %+v", o)
	}
}

// BenchmarkTask measures a prompt whose one call is a task, end to end
// with an offline model (the child's session row, lease, log and window,
// one model call, the answer back in the parent's log), beside the same
// prompt answered directly.
func BenchmarkTask(b *testing.B) {
	task := scripted.Call{ToolCalls: []scripted.ToolCall{{Name: "task", Input: json.RawMessage(`{"description":"d","prompt":"CHILD"}`)}}}
	sc := &scripted.Scenario{Turns: []scripted.Turn{
		{Match: "with task", Calls: []scripted.Call{task, {Text: scripted.Chunks{"ok"}}}},
		{Match: "without task", Calls: []scripted.Call{{Text: scripted.Chunks{"ok"}}}},
		{Match: "CHILD", Calls: []scripted.Call{{Text: scripted.Chunks{"answer"}}}},
	}}
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "bridle.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	p := scripted.New(sc)
	m := NewManager(Config{Store: st, Client: &recorder{}, DefaultModel: func(string) string { return "scripted/test" }, Tools: []sandbox.Tool{dump{}},
		OpenModel: func(context.Context, string, string) (provider.Provider, error) { return p, nil }})
	defer m.Shutdown()
	dir := b.TempDir()
	for _, name := range []string{"with task", "without task"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				// A fresh session each time keeps the parent's window small.
				info, err := m.New(context.Background(), NewParams{Cwd: dir})
				if err != nil {
					b.Fatal(err)
				}
				s, _ := m.Get(context.Background(), info.ID)
				if stop, err := s.Prompt(context.Background(), []event.Content{{Type: "text", Text: name}}); err != nil || stop != StopEndTurn {
					b.Fatal(stop, err)
				}
			}
		})
	}
}
