package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestRecoveryDoesNotHoldTheLoadForTheDotEnvList: a read cut short by a
// crash is run again when the session is loaded, redacted with the
// workspace's .env files. Their list is made by a walk of the tree, which
// on a large repository takes seconds (or longer than bridle waits):
// session/load, which is answered on the connection's read loop, must not
// wait for it. The load is answered first; the read runs after, once the
// list is known, and its output has the .env value redacted.
func TestRecoveryDoesNotHoldTheLoadForTheDotEnvList(t *testing.T) {
	const value = "recover-dotenv-" + "Tq58Xb2N"
	const scenario = `{"turns": [{"calls": [
		{"tool_calls": [{"name": "read_file", "input": {"path": "f.txt"}}]},
		{"text": "ok"}
	]}]}`
	ws := acptest.Workspace(t, map[string]string{
		".env":  "RECOVER_SETTING=" + value + "\n",
		"f.txt": "the setting is " + value + "\n",
	})
	// A tree whose walk is not over in an instant.
	for i := range 50 {
		for j := range 100 {
			if err := os.MkdirAll(filepath.Join(ws, "big", fmt.Sprint("d", i), fmt.Sprint("e", j)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	model := acptest.Scenario(t, scenario)
	a := acptest.Start(t, acptest.Options{Model: model, Env: []string{"BRIDLE_FAULT=tool:1"}})
	a.Initialize()
	sid := a.NewSession(ws)
	a.Request("session/prompt", acptest.PromptParams(sid, "read f.txt"))
	a.WaitExit() // killed inside the read, its result not recorded

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	if _, rerr := b.Call("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}); rerr != nil {
		t.Fatalf("session/load of a session with a read cut short: %v", rerr)
	}
	const rerun = "run again after a restart"
	for _, m := range b.Sent() {
		if m.Method == "session/load" {
			break
		}
		if strings.Contains(string(m.Raw), rerun) {
			t.Fatalf("the read was run again before session/load was answered: recovery waited on the connection's read loop for the workspace's .env list: %s", m.Raw)
		}
	}
	note := b.WaitNote(func(m acptest.Msg) bool {
		return m.Method == "session/update" && strings.Contains(string(m.Params), rerun)
	})
	if strings.Contains(string(note.Params), value) || !strings.Contains(string(note.Params), "[REDACTED") {
		t.Errorf("the read run again after the load is not redacted with the .env file: %s", note.Params)
	}

	evs := recovered(t, b, sid)
	results := 0
	for _, e := range evs {
		if e.Kind != "tool_result" {
			continue
		}
		results++
		var r struct{ Output, Status string }
		json.Unmarshal(e.Payload, &r)
		if r.Status != "completed" || !strings.HasPrefix(r.Output, "("+rerun+")") || strings.Contains(r.Output, value) {
			t.Errorf("the read's recorded result: %s %q", r.Status, r.Output)
		}
	}
	if results != 1 {
		t.Errorf("%d results recorded for the one read: %v", results, kinds(evs))
	}
	b.AssertValid(t)
}

// recovered waits until the turn a crash cut short is closed, and returns
// the session's log then. A call whose recovery runs a tool is settled
// after session/load (or resume) is answered unless the workspace's .env
// list was known already, which in a process just started it is not.
func recovered(t *testing.T, a *acptest.Agent, sid string) []loggedEvent {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		evs := events(t, a, sid)
		if len(evs) > 0 && evs[len(evs)-1].Kind == "turn_finished" {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recovered turn never closed: %v", kinds(evs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
