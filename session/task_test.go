package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// poke is a tool with the edit effect that changes nothing.
type poke struct{}

func (poke) Name() string        { return "poke" }
func (poke) Description() string { return "Poke." }
func (poke) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object"}`)
}
func (poke) Kind() tools.Kind          { return tools.KindEdit }
func (poke) Effect() permission.Effect { return permission.EffectEdit }
func (poke) Preview(context.Context, *tools.Env, json.RawMessage) (tools.Preview, error) {
	return tools.Preview{Title: "poke"}, nil
}
func (poke) Run(context.Context, *tools.Env, json.RawMessage) tools.Result {
	return tools.Result{Output: "poked"}
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
	m.cfg.Tools = []tools.Tool{dump{}, poke{}}
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
	m := NewManager(Config{Store: st, Client: &recorder{}, DefaultModel: func(string) string { return "scripted/test" }, Tools: []tools.Tool{dump{}},
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
