package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/tools"
)

// tool is a tool with a name and an effect that does nothing.
type tool struct {
	name   string
	effect permission.Effect
}

func (t tool) Name() string              { return t.name }
func (t tool) Description() string       { return t.name + "." }
func (t tool) Schema() json.RawMessage   { return json.RawMessage(`{"type":"object"}`) }
func (t tool) Kind() tools.Kind          { return tools.KindOther }
func (t tool) Effect() permission.Effect { return t.effect }
func (t tool) Preview(context.Context, *tools.Env, json.RawMessage) (tools.Preview, error) {
	return tools.Preview{Title: t.name}, nil
}
func (t tool) Run(context.Context, *tools.Env, json.RawMessage) tools.Result {
	return tools.Result{Output: t.name}
}

// parent is a Parent with a mode and tools; the rest is not reached by
// the tests that use it.
type parent struct {
	Parent
	mode  permission.Mode
	tools []tools.Tool
}

func (p *parent) Mode() permission.Mode     { return p.mode }
func (p *parent) Registry() *tools.Registry { return tools.NewRegistry(p.mode, p.tools) }
func (p *parent) Has(name string) bool {
	for _, t := range p.tools {
		if t.Name() == name {
			return true
		}
	}
	return false
}
func (p *parent) Show(context.Context, acp.SessionUpdate) {}

func TestChildToolNames(t *testing.T) {
	p := &parent{}
	p.tools = []tools.Tool{tool{"dump", permission.EffectRead}, tool{"poke", permission.EffectEdit}, tools.Remember{}, New(p)}
	tests := []struct {
		mode      permission.Mode
		requested []string
		want      string // names, or the error's text
	}{
		{permission.ModeAsk, nil, "dump"},
		{permission.ModeAsk, []string{"dump", "poke", "dump"}, "dump poke"},
		{permission.ModeReadOnly, []string{"poke"}, `"poke" is not available in read-only mode`},
		{permission.ModeReadOnly, nil, "dump"},
		{permission.ModeAsk, []string{"task"}, "cannot start subagents"},
		{permission.ModeAsk, []string{"nope"}, `there is no tool "nope"; a subagent may have: dump, poke, remember`},
	}
	for _, tt := range tests {
		p.mode = tt.mode
		got, err := ToolNames(p, tt.requested)
		text := strings.Join(got, " ")
		if err != nil {
			text = err.Error()
		}
		if !strings.Contains(text, tt.want) {
			t.Errorf("%s %v: %q, want %q", tt.mode, tt.requested, text, tt.want)
		}
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
		run    Run
		budget Budget
		status string
		want   []string
	}{
		{"finished", Run{Events: said, Stop: stopEndTurn}, Budget{}, "completed", []string{"Found it: 42."}},
		{"finished silent", Run{Events: said[:0], Stop: stopEndTurn}, Budget{}, "completed", []string{"without a final message"}},
		{"turns spent", Run{Events: said, Stop: stopMaxTurnRequests, Iters: 2, Spent: true}, Budget{Turns: 2}, "budget_exhausted",
			[]string{"Looking.", "Found it: 42.", "budget of 2 model calls", "session ses_c"}},
		{"tokens spent", Run{Events: said, Stop: stopMaxTokens, Used: 5000, Spent: true}, Budget{Tokens: 1000}, "budget_exhausted",
			[]string{"5000 tokens of its budget of 1000"}},
		{"cancelled", Run{Events: cut, Stop: stopCancelled}, Budget{}, "cancelled", []string{"Looking.", "Halfway [interrupted]", "cancelled before it finished"}},
		{"failed", Run{Events: said, Err: errors.New("boom")}, Budget{}, "failed", []string{"failed: boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := outcomeOf("ses_c", tt.run, tt.budget)
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
