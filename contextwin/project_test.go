package contextwin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
)

func ev(seq int64, p event.Payload) event.Event { return event.Event{Seq: seq, Payload: p} }

func prompt(s string) event.UserMessage {
	return event.UserMessage{Content: []event.Content{{Type: "text", Text: s}}}
}

// render writes messages compactly: role:part|part / role:...
func render(msgs []provider.Message) string {
	var out []string
	for _, m := range msgs {
		var parts []string
		for _, p := range m.Parts {
			switch p.Kind {
			case provider.PartText:
				parts = append(parts, "text("+p.Text+")")
			case provider.PartThinking:
				parts = append(parts, "thinking("+p.Text+")")
			case provider.PartToolUse:
				parts = append(parts, "use("+p.ToolCallID+" "+p.ToolName+" "+string(p.Input)+")")
			case provider.PartToolResult:
				parts = append(parts, "result("+p.ToolCallID+" "+p.Text+")")
			}
		}
		out = append(out, string(m.Role)+":"+strings.Join(parts, "|"))
	}
	return strings.Join(out, " / ")
}

func TestProject(t *testing.T) {
	call := func(id string) event.ToolCall {
		return event.ToolCall{ID: id, Name: "read_file", Input: json.RawMessage(`{"path":"a"}`)}
	}
	tests := []struct {
		name   string
		events []event.Event
		want   string
	}{
		{
			name: "prompt and answer",
			events: []event.Event{
				ev(1, event.SessionStarted{}),
				ev(2, prompt("hi")),
				ev(3, event.AssistantMessage{Text: "hello"}),
			},
			want: "user:text(hi) / assistant:text(hello)",
		},
		{
			name: "tool round trip, results merged before the next prompt",
			events: []event.Event{
				ev(1, prompt("read a")),
				ev(2, event.AssistantMessage{Text: "reading", ToolCalls: []event.ToolCall{call("t1"), call("t2")}}),
				ev(3, event.ToolStarted{CallID: "t1"}),
				ev(4, event.ToolResult{CallID: "t1", Output: "A"}),
				ev(5, event.ToolResult{CallID: "t2", Output: "B"}),
				ev(6, event.AssistantMessage{Text: "done"}),
			},
			want: `user:text(read a) / assistant:text(reading)|use(t1 read_file {"path":"a"})|use(t2 read_file {"path":"a"}) / user:result(t1 A)|result(t2 B) / assistant:text(done)`,
		},
		{
			name: "a call without a result gets a synthetic cancelled one",
			events: []event.Event{
				ev(1, prompt("go")),
				ev(2, event.AssistantMessage{ToolCalls: []event.ToolCall{call("t1"), call("t2")}}),
				ev(3, event.ToolResult{CallID: "t1", Output: "A"}),
				ev(4, event.ToolStarted{CallID: "t2"}),
				ev(5, prompt("next")),
			},
			want: `user:text(go) / assistant:use(t1 read_file {"path":"a"})|use(t2 read_file {"path":"a"}) / user:result(t1 A)|result(t2 ` + CancelledResult + `)|text(next)`,
		},
		{
			name: "a dangling call at the end is closed too",
			events: []event.Event{
				ev(1, prompt("go")),
				ev(2, event.AssistantMessage{ToolCalls: []event.ToolCall{call("t1")}}),
			},
			want: `user:text(go) / assistant:use(t1 read_file {"path":"a"}) / user:result(t1 ` + CancelledResult + `)`,
		},
		{
			name: "interrupted text is kept and marked",
			events: []event.Event{
				ev(1, prompt("write")),
				ev(2, event.Interrupted{Text: "Once upon", Reason: "cancelled"}),
				ev(3, prompt("again")),
			},
			want: "user:text(write) / assistant:text(Once upon" + InterruptedNote + ") / user:text(again)",
		},
		{
			name: "an empty interruption still answers its prompt",
			events: []event.Event{
				ev(1, prompt("write")),
				ev(2, event.Interrupted{Reason: "restart"}),
				ev(3, prompt("again")),
			},
			want: "user:text(write) / assistant:text([interrupted: bridle restarted here; the rest of this response was lost]) / user:text(again)",
		},
		{
			name: "only events after the latest compaction, after its summary",
			events: []event.Event{
				ev(1, prompt("old")),
				ev(2, event.AssistantMessage{Text: "old answer"}),
				ev(3, prompt("newer")),
				ev(4, event.Compaction{Through: 2, Summary: "first"}),
				ev(5, prompt("old")),
				ev(6, event.AssistantMessage{Text: "x"}),
				ev(7, event.Compaction{Through: 6, Summary: "second"}),
				ev(8, prompt("latest")),
			},
			want: "user:text(" + SummaryText(event.Compaction{Summary: "second"}) + ")|text(latest)",
		},
		{
			name: "invalid tool input is sent as an empty object",
			events: []event.Event{
				ev(1, prompt("go")),
				ev(2, event.AssistantMessage{ToolCalls: []event.ToolCall{{ID: "t", Name: "x", Input: json.RawMessage(`{bad`)}}}),
				ev(3, event.ToolResult{CallID: "t", Output: "E", IsError: true}),
			},
			want: "user:text(go) / assistant:use(t x {}) / user:result(t E)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(Project(tt.events)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
