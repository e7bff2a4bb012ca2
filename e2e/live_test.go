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

// TestLiveOutputHoldsAValueBeingPrinted: a command prints a .env value
// slowly (its first six characters, then waits for the test before the
// rest): the editor's live card never shows that start of the value (the
// line it has not ended shows only what cannot become part of a secret),
// and the result has the whole line, redacted.
func TestLiveOutputHoldsAValueBeingPrinted(t *testing.T) {
	value := "Zq9xLm" + "P4vR7tK2wB"
	// One write holds the label and the value's start: a card showing the
	// label was made after the start was written.
	scenario, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"calls": []any{
		map[string]any{"tool_calls": []any{map[string]any{"name": "run_command", "input": map[string]any{
			"command": `printf 'pw: %s' "$(cut -c13-18 .env)"; while [ ! -f go-on ]; do sleep 0.05; done; printf '%s\n' "$(cut -c19-28 .env)"; echo finished`}}}},
		map[string]any{"text": "Done."},
	}}}})
	ws := acptest.Workspace(t, map[string]string{".env": "DB_PASSWORD=" + value + "\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, string(scenario))})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "run it"))

	liveUpdate := func(m acptest.Msg, holds string) bool {
		return m.Method == "session/update" && strings.Contains(string(m.Params), `"tool_call_update"`) &&
			!strings.Contains(string(m.Params), `"status"`) && strings.Contains(string(m.Params), holds)
	}
	live := a.WaitNote(func(m acptest.Msg) bool { return liveUpdate(m, "pw: ") })
	if strings.Contains(string(live.Params), value[:6]) {
		t.Errorf("the live card shows the start of the value being printed: %s", live.Params)
	}
	if err := os.WriteFile(filepath.Join(ws, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, rerr := a.Wait(answer); rerr != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("prompt answered %s, %v", res, rerr)
	}
	out := results(t, a.DB, sid)
	if len(out) != 1 || !strings.Contains(out[0]["output"].(string), "pw: [REDACTED:.env:DB_PASSWORD]\nfinished") {
		t.Errorf("result %v, want the whole line, redacted", out)
	}
	shown := 0
	for _, m := range a.Notes() {
		if strings.Contains(string(m.Params), value[:6]) {
			shown++
			t.Errorf("a notification shows the start of the value: %s", m.Params)
		}
	}
	t.Logf("%d notifications, %d showing the value's start", len(a.Notes()), shown)
	a.CloseStdin()
	a.AssertValid(t)
}
