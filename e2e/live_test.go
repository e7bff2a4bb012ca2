package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestCommandOutputIsShownAsItComes: a command prints, then waits for the
// test to see that output in the editor before it goes on; what the editor
// saw was redacted, and the result that follows has the whole output.
func TestCommandOutputIsShownAsItComes(t *testing.T) {
	value := "livewin-" + "Qz8Rt5Wm2Np7Xc"
	scenario, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"calls": []any{
		map[string]any{"tool_calls": []any{map[string]any{"name": "run_command", "input": map[string]any{
			"command": "echo started; cat .env; while [ ! -f go-on ]; do sleep 0.05; done; echo finished"}}}},
		map[string]any{"text": "Done."},
	}}}})
	ws := acptest.Workspace(t, map[string]string{".env": "K=" + value + "\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, string(scenario))})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "run it"))

	// The command is still waiting for go-on: this update can only be
	// its live output.
	// The tail is shown as it grows: wait for the one that has reached
	// the .env line.
	live := a.WaitNote(func(m acptest.Msg) bool {
		return m.Method == "session/update" && strings.Contains(string(m.Params), "started") && strings.Contains(string(m.Params), "K=") &&
			strings.Contains(string(m.Params), `"tool_call_update"`) && !strings.Contains(string(m.Params), `"status"`)
	})
	if strings.Contains(string(live.Params), value) || !strings.Contains(string(live.Params), "[REDACTED:.env:K]") {
		t.Errorf("the live output was not redacted: %s", live.Params)
	}
	if err := os.WriteFile(filepath.Join(ws, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, rerr := a.Wait(answer); rerr != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("prompt answered %s, %v", res, rerr)
	}
	out := results(t, a.DB, sid)
	if len(out) != 1 || !strings.Contains(out[0]["output"].(string), "started") || !strings.Contains(out[0]["output"].(string), "finished") {
		t.Fatalf("result %v, want the whole output", out)
	}
	a.CloseStdin()
	a.AssertValid(t)
}
