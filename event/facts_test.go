package event

import (
	"slices"
	"testing"
)

// TestEveryKindHasFacts fails when a kind is added without its entry in
// the facts table (or an entry names a kind Decode does not know).
func TestEveryKindHasFacts(t *testing.T) {
	for _, k := range Kinds() {
		if _, ok := facts[k]; !ok {
			t.Errorf("kind %s has no entry in facts (facts.go): say whether it opens or closes a turn, is once per call, streamed, shown", k)
		}
	}
	for k := range facts {
		if !slices.Contains(Kinds(), k) {
			t.Errorf("facts names %s, which Decode does not know", k)
		}
	}
}

func TestFacts(t *testing.T) {
	tests := []struct {
		p    Payload
		want Facts
		key  string
	}{
		{UserMessage{}, Facts{OpensTurn: true, Shown: true}, ""},
		{TurnFinished{}, Facts{ClosesTurn: true}, ""},
		{ToolStarted{Key: "s/1/0"}, Facts{OncePerCall: true, Shown: true}, "s/1/0"},
		{ToolResult{Key: "s/1/1"}, Facts{OncePerCall: true, Shown: true}, "s/1/1"},
		{ApprovalRequest{Key: "s/1/0"}, Facts{}, ""},
		{SubagentStarted{Key: "s/1/0"}, Facts{Kept: true}, ""},
		{Compaction{}, Facts{Shown: true, Kept: true}, ""},
		{ContextAssembled{}, Facts{Shown: true}, ""},
		{AssistantMessage{}, Facts{Streamed: true, Shown: true}, ""},
		{Interrupted{}, Facts{Streamed: true, Shown: true}, ""},
	}
	for _, tt := range tests {
		if got := tt.p.Kind().Facts(); got != tt.want {
			t.Errorf("%s: facts %+v, want %+v", tt.p.Kind(), got, tt.want)
		}
		if got := CallKey(tt.p); got != tt.key {
			t.Errorf("%s: CallKey %q, want %q", tt.p.Kind(), got, tt.key)
		}
		if tt.p.Kind().Facts().OncePerCall != (CallKey(tt.p) != "") {
			t.Errorf("%s: OncePerCall and CallKey disagree", tt.p.Kind())
		}
	}
}
