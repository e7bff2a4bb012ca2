package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// stuck is a tool that ignores its context: it returns only when release
// is closed, as a read of a hung device would.
type stuck struct {
	started chan struct{}
	release chan struct{}
}

func (stuck) Name() string              { return "stuck" }
func (stuck) Description() string       { return "Never returns." }
func (stuck) Schema() json.RawMessage   { return json.RawMessage(`{"type":"object"}`) }
func (stuck) Kind() tools.Kind          { return tools.KindRead }
func (stuck) Effect() permission.Effect { return permission.EffectRead }
func (stuck) Preview(context.Context, *tools.Env, json.RawMessage) (tools.Preview, error) {
	return tools.Preview{Title: "stuck"}, nil
}
func (t stuck) Run(context.Context, *tools.Env, json.RawMessage) tools.Result {
	close(t.started)
	<-t.release
	return tools.Result{Output: "late"}
}

// TestCancelEndsATurnWhoseToolIsStuck: cancel ends the turn even when its
// tool never honours the cancel; the result says the call was abandoned,
// and shutdown is not held up by it.
func TestCancelEndsATurnWhoseToolIsStuck(t *testing.T) {
	tool := stuck{started: make(chan struct{}), release: make(chan struct{})}
	defer close(tool.release)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "bridle.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	win, _ := contextwin.New(config.Context{}, nil)
	p := scripted.New(&scripted.Scenario{Turns: []scripted.Turn{{Calls: []scripted.Call{
		{ToolCalls: []scripted.ToolCall{{Name: "stuck", Input: json.RawMessage(`{}`)}}},
		{Text: scripted.Chunks{"never reached"}},
	}}}})
	m := NewManager(Config{Store: st, Client: &recorder{}, DefaultModel: func(string) string { return "scripted/test" },
		Tools: []tools.Tool{tool}, Window: win,
		OpenModel: func(context.Context, string, string) (provider.Provider, error) { return p, nil }})
	info, err := m.New(context.Background(), NewParams{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Get(context.Background(), info.ID)
	type answer struct {
		stop StopReason
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		stop, err := s.Prompt(context.Background(), []event.Content{{Type: "text", Text: "go"}})
		done <- answer{stop, err}
	}()
	<-tool.started
	m.Cancel(info.ID)
	var a answer
	select {
	case a = <-done:
	case <-time.After(time.Minute):
		// A hang guard, not a timing assertion.
		t.Fatal("the turn did not end after the cancel: it waits on its stuck tool")
	}
	if a.err != nil || a.stop != StopCancelled {
		t.Fatalf("stop %q, err %v", a.stop, a.err)
	}
	var result string
	for _, e := range s.Events() {
		if r, ok := e.Payload.(event.ToolResult); ok {
			result = r.Output
		}
	}
	if !strings.Contains(result, "abandoned") {
		t.Fatalf("the result does not say the call was abandoned: %q", result)
	}
	m.Shutdown()
}
