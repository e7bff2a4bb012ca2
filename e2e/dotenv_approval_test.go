package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// approvedCatScenario: a command that needs the user's approval prints
// the workspace's .env; the second turn reads the result back.
const approvedCatScenario = `{"turns": [
  {"calls": [
    {"tool_calls": [{"name": "run_command", "input": {"command": "cat .env"}}]},
    {"text": "Printed it."}
  ]},
  {"calls": [{"text": "Done."}]}
]}`

// writeWhileAsked answers each permission request by first writing the
// workspace's .env (as the user, or another program, may while the
// question is on screen), then allowing the call once.
func writeWhileAsked(t *testing.T, ws, content string) func(acptest.Msg) (any, *acptest.RPCError) {
	return func(acptest.Msg) (any, *acptest.RPCError) {
		if err := os.WriteFile(filepath.Join(ws, ".env"), []byte(content), 0o600); err != nil {
			t.Errorf("write .env: %v", err)
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}, nil
	}
}

// TestDotEnvWrittenWhileAskedThroughTheBinary: a .env file made or
// changed while a call waits for the user's approval is redacted from
// that call's output: the call is run with the .env files as they are
// when it runs, not as they were when it was asked about.
func TestDotEnvWrittenWhileAskedThroughTheBinary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string // the workspace before the prompt
		value string            // the value the .env gets while the question is asked
	}{
		{"a .env made", map[string]string{"README.md": "# app\n"}, "made-while-" + "asked-Tw58Jd3R"},
		{"a .env changed", map[string]string{".env": "ASKED_SETTING=before-the-" + "question-Kc27Hm9V\n"}, "changed-while-" + "asked-Gy41Np6S"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := map[string]string{"the value the .env got while the call was asked about": tc.value}
			ws := acptest.Workspace(t, tc.files)
			requests := filepath.Join(t.TempDir(), "requests.jsonl")
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, approvedCatScenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
			a.OnRequest = writeWhileAsked(t, ws, "ASKED_SETTING="+tc.value+"\n")
			a.Initialize()
			sid := a.NewSession(ws)
			if stop := a.Prompt(sid, "print the settings"); stop != "end_turn" {
				t.Fatalf("stopReason = %q", stop)
			}
			wantRedacted(t, a, sid, requests, values, 1, "[REDACTED:.env:ASKED_SETTING]")
		})
	}
}

// TestDotEnvWrittenWhileAskedAgainThroughTheBinary: the same for a
// question a restart asks again: bridle dies while the call waits for the
// user; after the restart the question is asked again, and while it is,
// the .env is made.
func TestDotEnvWrittenWhileAskedAgainThroughTheBinary(t *testing.T) {
	const value = "made-while-asked-" + "again-Lp63Xb8W"
	values := map[string]string{"the value the .env got while the call was asked about again": value}
	ws := acptest.Workspace(t, map[string]string{"README.md": "# app\n"})
	model := acptest.Scenario(t, approvedCatScenario)
	a := acptest.Start(t, acptest.Options{Model: model})
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	a.OnRequest = func(acptest.Msg) (any, *acptest.RPCError) {
		asked <- struct{}{}
		<-release
		return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
	}
	a.Initialize()
	sid := a.NewSession(ws)
	a.Request("session/prompt", acptest.PromptParams(sid, "print the settings"))
	<-asked
	a.Kill()
	close(release)

	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model, Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	b.OnRequest = writeWhileAsked(t, ws, "ASKED_SETTING="+value+"\n")
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	// The recovered call's result reaches the editor once it is recorded.
	b.WaitNote(func(m acptest.Msg) bool {
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Status        string `json:"status"`
			} `json:"update"`
		}
		json.Unmarshal(m.Params, &p)
		return p.Update.SessionUpdate == "tool_call_update" && (p.Update.Status == "completed" || p.Update.Status == "failed")
	})
	if stop := b.Prompt(sid, "go on"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	wantRedacted(t, b, sid, requests, values, 1, "[REDACTED:.env:ASKED_SETTING]")
}
