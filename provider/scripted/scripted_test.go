package scripted

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/provider"
)

func collect(t *testing.T, p *Provider, req provider.Request) (provider.Response, error) {
	t.Helper()
	var c provider.Collector
	for d, err := range p.Stream(context.Background(), req) {
		if err != nil {
			return c.Response(), err
		}
		c.Add(d)
	}
	return c.Response(), nil
}

func user(text string) provider.Message {
	return provider.Message{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: text}}}
}

func assistant() provider.Message {
	return provider.Message{Role: provider.RoleAssistant, Parts: []provider.Part{{Kind: provider.PartText, Text: "x"}}}
}

func toolResults() provider.Message {
	return provider.Message{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartToolResult, ToolCallID: "t", Text: "r"}}}
}

func TestTheRequestPicksTheStep(t *testing.T) {
	sc := &Scenario{Turns: []Turn{
		{Calls: []Call{{Text: Chunks{"t0c0"}}, {Text: Chunks{"t0c1"}}}},
		{Calls: []Call{{Text: Chunks{"t1c0"}}}},
		{Match: "special", Calls: []Call{{Text: Chunks{"matched"}}}},
	}, Summaries: []Call{{Text: Chunks{"summary one"}}}}
	p := New(sc)
	tests := []struct {
		name string
		req  provider.Request
		want string
	}{
		{"first call of the first turn", provider.Request{Messages: []provider.Message{user("a")}}, "t0c0"},
		{"second call after tool results", provider.Request{Messages: []provider.Message{user("a"), assistant(), toolResults()}}, "t0c1"},
		{"second prompt", provider.Request{Messages: []provider.Message{user("a"), assistant(), toolResults(), assistant(), user("b")}}, "t1c0"},
		{"matched turn", provider.Request{Messages: []provider.Message{user("a"), assistant(), user("something special")}}, "matched"},
		{"past the end", provider.Request{Messages: []provider.Message{user("a"), assistant(), user("b"), assistant(), user("c"), assistant(), user("d")}}, "nothing more"},
		{"summary request", provider.Request{System: []provider.SystemBlock{{Text: SummaryRequest + " please"}}, Messages: []provider.Message{user("a")}}, "summary one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := collect(t, p, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.Text, tt.want) {
				t.Errorf("text = %q, want %q", r.Text, tt.want)
			}
		})
	}
}

func TestToolCallsStreamInPieces(t *testing.T) {
	p := New(&Scenario{Turns: []Turn{{Calls: []Call{{
		Text:      Chunks{"reading ", "now"},
		ToolCalls: []ToolCall{{Name: "read_file", Input: []byte(`{"path":"a.go"}`)}, {Name: "list_dir"}},
	}}}}})
	var kinds []provider.DeltaKind
	var c provider.Collector
	for d, err := range p.Stream(context.Background(), provider.Request{Messages: []provider.Message{user("go")}}) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, d.Kind)
		c.Add(d)
	}
	r := c.Response()
	if r.Text != "reading now" || r.StopReason != provider.StopToolUse || len(r.ToolCalls) != 2 {
		t.Fatalf("response = %+v", r)
	}
	if string(r.ToolCalls[0].Input) != `{"path":"a.go"}` || string(r.ToolCalls[1].Input) != `{}` {
		t.Fatalf("inputs = %s, %s", r.ToolCalls[0].Input, r.ToolCalls[1].Input)
	}
	args := 0
	for _, k := range kinds {
		if k == provider.DeltaToolArgs {
			args++
		}
	}
	if args < 4 {
		t.Errorf("arguments came in %d pieces; a real API splits them", args)
	}
}

func TestFailuresAndCancellation(t *testing.T) {
	p := New(&Scenario{Turns: []Turn{{Calls: []Call{{
		Text: Chunks{"a ", "b ", "c"},
		Fail: &Failure{AfterChunks: 2, Kind: provider.ErrOverloaded, Status: 529, Message: "overloaded"},
	}}}}})
	r, err := collect(t, p, provider.Request{Messages: []provider.Message{user("go")}})
	pe, ok := provider.AsError(err)
	if !ok || pe.Kind != provider.ErrOverloaded || !pe.Partial || pe.Retryable {
		t.Fatalf("err = %#v", err)
	}
	if r.Text != "a b " {
		t.Fatalf("partial text = %q", r.Text)
	}

	slow := New(&Scenario{Turns: []Turn{{Calls: []Call{{Text: Chunks{"a", "b", "c"}, DelayMS: 1000}}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	for _, err := range slow.Stream(ctx, provider.Request{Messages: []provider.Message{user("go")}}) {
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v", err)
			}
			break
		}
	}
	if time.Since(start) > 900*time.Millisecond {
		t.Fatal("the stream did not honour cancellation")
	}
}
