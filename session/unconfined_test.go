package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// shell is a tool that runs commands: it only counts them.
type shell struct{ ran *int }

func (shell) Name() string        { return "shell" }
func (shell) Description() string { return "Run a command." }
func (shell) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)
}
func (shell) Kind() tools.Kind          { return tools.KindExecute }
func (shell) Effect() permission.Effect { return permission.EffectExecute }
func (shell) Preview(_ context.Context, _ *tools.Env, input json.RawMessage) (tools.Preview, error) {
	var in struct{ Command string }
	json.Unmarshal(input, &in)
	return tools.Preview{Title: in.Command, Command: in.Command}, nil
}
func (sh shell) Run(context.Context, *tools.Env, json.RawMessage) tools.Result {
	*sh.ran++
	return tools.Result{Output: "ran"}
}

// answering is an editor whose user gives the same answer to every
// question, and which keeps the questions.
type answering struct {
	recorder
	option string
	mu     sync.Mutex
	asked  []acp.RequestPermissionRequest
}

func (a *answering) RequestPermission(_ context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, r)
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: a.option}}}, nil
}

// Full-auto runs commands without asking because the box keeps them in;
// on a machine where it cannot, the user is asked, and a session-wide
// answer makes that once per session.
func TestFullAutoAsksBeforeUnconfinedCommands(t *testing.T) {
	const why = "commands can write anywhere this user can"
	tests := []struct {
		name       string
		unconfined string
		mode       string
		answer     string
		wantAsked  int
		wantRan    int
	}{
		{"confined: never asked", "", "full-auto", "reject_once", 0, 3},
		{"allowed for the session: asked once", why, "full-auto", "allow_always", 1, 3},
		{"allowed once: asked each time", why, "full-auto", "allow_once", 3, 3},
		{"refused for the session: asked once, none run", why, "full-auto", "reject_always", 1, 0},
		{"ask mode asks per command as always", why, "ask", "allow_once", 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "bridle.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			var calls []scripted.Call
			for _, c := range []string{"make", "make test", "rm -rf build"} {
				calls = append(calls, scripted.Call{ToolCalls: []scripted.ToolCall{{Name: "shell", Input: json.RawMessage(`{"command":"` + c + `"}`)}}})
			}
			calls = append(calls, scripted.Call{Text: scripted.Chunks{"Done."}})
			p := scripted.New(&scripted.Scenario{Turns: []scripted.Turn{{Calls: calls}}})
			ran := 0
			ed := &answering{option: tt.answer}
			m := NewManager(Config{
				Store: st, Client: ed, DefaultModel: func(string) string { return "scripted/test" }, Tools: []tools.Tool{shell{&ran}},
				OpenModel:  func(context.Context, string, string) (provider.Provider, error) { return p, nil },
				Unconfined: func() string { return tt.unconfined },
			})
			t.Cleanup(m.Shutdown)
			info, err := m.New(ctx, NewParams{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			s, _ := m.Get(ctx, info.ID)
			if err := s.SetMode(ctx, tt.mode); err != nil {
				t.Fatal(err)
			}
			if stop, err := prompt(t, s, "Build it."); err != nil || stop != StopEndTurn {
				t.Fatalf("stop %s, err %v", stop, err)
			}
			if len(ed.asked) != tt.wantAsked || ran != tt.wantRan {
				t.Fatalf("asked %d times and ran %d commands, want %d and %d", len(ed.asked), ran, tt.wantAsked, tt.wantRan)
			}
			if tt.mode != "full-auto" || tt.wantAsked == 0 {
				return
			}
			q := ed.asked[0]
			var always string
			for _, o := range q.Options {
				if o.OptionID == "allow_always" {
					always = o.Name
				}
			}
			if !strings.Contains(always, "every command (without the sandbox)") {
				t.Errorf("the session-wide option says %q: it should say it covers every command run without the sandbox", always)
			}
			var req event.ApprovalRequest
			var results []event.ToolResult
			for _, e := range s.Events() {
				switch v := e.Payload.(type) {
				case event.ApprovalRequest:
					if req.Key == "" {
						req = v
					}
				case event.ToolResult:
					results = append(results, v)
				}
			}
			if req.Pattern != "*" || !strings.Contains(req.Summary, why) {
				t.Errorf("recorded question %+v: want pattern * and the reason in its summary", req)
			}
			if tt.answer == "reject_always" {
				if len(results) != 3 || !strings.Contains(results[2].Output, "without the sandbox") {
					t.Errorf("results after a session-wide refusal: %+v", results)
				}
			}
		})
	}
}
