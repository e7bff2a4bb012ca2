package replay

import (
	"context"
	"testing"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/tools"
)

// TestReplayerMatchesShownFacts holds the Shown fact of package event to
// what the replayer does: a kind marked shown gives the editor updates,
// one not marked gives none (the replayer returns nothing for it).
func TestReplayerMatchesShownFacts(t *testing.T) {
	r := New(Config{SessionID: "s", Env: &tools.Env{}, Redactor: redact.New(nil)})
	shown := []event.Payload{
		event.UserMessage{Content: []event.Content{{Type: "text", Text: "hi"}}},
		event.AssistantMessage{Text: "hello"},
		event.ToolStarted{Key: "s/2/0", Name: "read_file"},
		event.ToolResult{Key: "s/2/0", Name: "read_file", Output: "x"},
		event.Interrupted{Text: "half"},
		event.ConstraintPinned{Text: "c", Source: "user"},
		event.DecisionRecorded{Text: "d", Source: "user"},
		event.ContextAssembled{Window: 10},
		event.ModeChanged{From: "ask", To: "code"},
		event.ProviderError{Message: "down", Final: true},
		event.PlanUpdated{Entries: []event.PlanEntry{{Content: "read", Status: "pending"}}},
		event.Compaction{Through: 9, Goal: "g"},
		event.Rewound{Turn: 2, From: 5, Restored: []event.FileRestore{{Path: "/w/a", From: "sha256:1", To: "sha256:0"}}},
		event.HookRan{Key: "s/2/0/PreToolUse/0", Event: "PreToolUse", Command: "check", Whose: "user", Verdict: "deny", Reason: "no"},
		event.CommandFinished{Key: "s/2/0", ID: "bg1", Status: "stopped", Summary: "[stopped]"},
	}
	seen := map[event.Kind]bool{}
	for _, p := range shown {
		seen[p.Kind()] = true
		if !p.Kind().Facts().Shown {
			t.Errorf("%s: the replayer shows it, but its facts say it is not shown", p.Kind())
		}
		if len(r.Updates(context.Background(), event.Event{Payload: p})) == 0 {
			t.Errorf("%s: marked shown, but the replayer gave no update", p.Kind())
		}
	}
	for _, k := range event.Kinds() {
		if k.Facts().Shown && !seen[k] {
			t.Errorf("%s is marked shown: add an example to this test", k)
		}
	}
}
