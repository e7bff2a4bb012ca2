package contextwin

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
)

// sessionLog builds a session's log as the session would: each event is
// counted for the model when it is appended, and every assembly appends
// its context_assembled.
type sessionLog struct {
	t      *testing.T
	w      *Window
	spec   string
	events []event.Event
	calls  int
	// memo is the session's Memo, kept across assemblies.
	memo Memo
}

func newLog(t *testing.T, cfg config.Context, m config.ModelSpec) *sessionLog {
	t.Helper()
	w, err := New(cfg, func(string) config.ModelSpec { return m })
	if err != nil {
		t.Fatal(err)
	}
	l := &sessionLog{t: t, w: w, spec: "test/model"}
	l.add(event.SessionStarted{Model: l.spec, Mode: "ask"})
	return l
}

func (l *sessionLog) add(p event.Payload) event.Event {
	b, err := event.Encode(p)
	if err != nil {
		l.t.Fatal(err)
	}
	e := event.Event{Seq: int64(len(l.events) + 1), Payload: p, Tokens: l.w.CountEvent(l.spec, p.Kind(), b)}
	l.events = append(l.events, e)
	return e
}

func (l *sessionLog) prompt(text string) {
	l.add(event.UserMessage{Content: []event.Content{{Type: "text", Text: text}}})
}

func (l *sessionLog) answer(text string) { l.add(event.AssistantMessage{Text: text}) }

// tool records one model message calling name and its result.
func (l *sessionLog) tool(name, input, output, artifact string) event.Event {
	l.calls++
	id := fmt.Sprintf("call_%d", l.calls)
	l.add(event.AssistantMessage{Text: "checking", ToolCalls: []event.ToolCall{{ID: id, Name: name, Input: json.RawMessage(input)}}})
	l.add(event.ToolStarted{CallID: id, Name: name})
	r := event.ToolResult{CallID: id, Name: name, Output: output, Status: "completed", Artifact: artifact}
	// The session cuts at the source before appending.
	return l.add(l.cut(r))
}

// cut is the session's cut at the source; the count it returns must be
// the one the log would have recorded.
func (l *sessionLog) cut(r event.ToolResult) event.ToolResult {
	r, n := l.w.CutOutput(l.spec, r, l.memo.Ratio(), nil)
	b, err := event.Encode(r)
	if err != nil {
		l.t.Fatal(err)
	}
	if want := l.w.CountEvent(l.spec, r.Kind(), b); n != want {
		l.t.Fatalf("CutOutput counted %d tokens, the log would record %d", n, want)
	}
	return r
}

func (l *sessionLog) input() Input {
	return Input{Spec: l.spec, Model: "model", System: "You are a test agent.", Tools: testTools, Events: l.events}
}

// assemble assembles the next request and records it, as the session does.
func (l *sessionLog) assemble() Assembly {
	l.t.Helper()
	in := l.input()
	a, err := l.w.Assemble(in)
	if err != nil {
		l.t.Fatalf("assemble: %v", err)
	}
	// The Memo reads only what is new, and must assemble the same.
	in.Memo = &l.memo
	if m, err := l.w.Assemble(in); err != nil || !reflect.DeepEqual(m, a) {
		l.t.Fatalf("assembled with the memo: %v\n%+v\nfrom scratch:\n%+v", err, m, a)
	}
	l.check(a)
	l.add(a.Occupancy)
	return a
}

// check verifies what every request must satisfy: it fits the window
// with its response slack, its numbers add up, and it holds the first
// request and every pin.
func (l *sessionLog) check(a Assembly) {
	l.t.Helper()
	o := a.Occupancy
	lim := l.w.Limits(l.spec)
	if o.Used()+a.Request.MaxTokens > o.Window {
		l.t.Fatalf("request of %d tokens + %d for the answer exceeds the window of %d", o.Used(), a.Request.MaxTokens, o.Window)
	}
	if a.Request.MaxTokens != lim.Reserve {
		l.t.Fatalf("max_tokens = %d, want the reserve %d", a.Request.MaxTokens, lim.Reserve)
	}
	if o.Used()+o.Slack != o.Window {
		l.t.Fatalf("the five numbers do not add up to the window: %+v", o)
	}
	text := requestText(a.Request)
	st := scan(l.events)
	if first := st.first.Payload.(event.UserMessage).Text(); !strings.Contains(text, first) {
		l.t.Fatalf("the request lacks the first request %q", first)
	}
	for _, p := range append(st.pins.Constraints, st.pins.Decisions...) {
		if !strings.Contains(text, p) {
			l.t.Fatalf("the request lacks the pin %q", p)
		}
	}
}

func requestText(r provider.Request) string {
	var b strings.Builder
	for _, s := range r.System {
		b.WriteString(s.Text + "\n")
	}
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			b.WriteString(p.Text + "\n")
		}
	}
	return b.String()
}

var testTools = []provider.Tool{{Name: "run", Description: "Run a command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}

// lines returns n lines of varied text, about 12 tokens each.
func lines(n int, tag string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s line %d: value=%d status ok path/to/file_%d.go\n", tag, i, i*7919%1000, i%17)
	}
	return b.String()
}
