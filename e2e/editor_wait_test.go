package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestEditWaitsForAnotherWindowsCommandBounded: in one bridle window,
// session B (at the parent of A's directory) runs a command that goes on
// until the test stops it; in another window, session A's edit (its
// editor offers fs) has to wait for it, since the command could swap the
// file while the editor opens it. A's card says it waits for a command of
// another session; when B's command ends, the edit goes through the
// editor. The second time B's command does not end: after 30 s A's edit
// gives up, its result says why, and nothing is written. Before, the edit
// waited as long as the command ran (up to 10 minutes), saying nothing.
func TestEditWaitsForAnotherWindowsCommandBounded(t *testing.T) {
	parent := acptest.Workspace(t, map[string]string{"proj/a.txt": "one\n"})
	proj := filepath.Join(parent, "proj")
	hold := func(label, stop string) string {
		b, _ := json.Marshal(map[string]any{"command": "echo holding " + label + "; while [ ! -e " + stop + " ]; do sleep 0.05; done; echo released", "timeout_seconds": 600})
		return `{"match": "` + label + `", "calls": [{"tool_calls": [{"name": "run_command", "input": ` + string(b) + `}]}, {"text": "held"}]}`
	}
	edit := func(label, from, to string) string {
		return `{"match": "` + label + `", "calls": [{"tool_calls": [{"name": "edit_file", "input": {"path": "a.txt", "old_string": "` + from + `", "new_string": "` + to + `"}}]}, {"text": "edited"}]}`
	}
	model := acptest.Scenario(t, `{"turns": [`+hold("HOLD-1", "stop1")+`,`+hold("HOLD-2", "stop2")+`,`+edit("EDIT-1", "one", "two")+`,`+edit("EDIT-2", "two", "three")+`]}`)
	// Both windows share the user's cache directory, where the lock file is.
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	a := acptest.Start(t, acptest.Options{Model: model, Env: env})
	ed := &linkEditor{}
	a.OnRequest = ed.handle
	a.InitializeWith(true, true)
	b := acptest.Start(t, acptest.Options{Model: model, Env: env})
	b.Initialize()
	sidA, sidB := a.NewSession(proj), b.NewSession(parent)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sidA, "modeId": "auto-edit"}, nil)
	b.MustCall("session/set_mode", map[string]any{"sessionId": sidB, "modeId": "full-auto"}, nil)

	// newNote waits for a session/update of sid holding text that is not
	// one of those seen before (a later card's).
	seen := map[string]bool{}
	newNote := func(agent *acptest.Agent, sid, text string) {
		t.Helper()
		m := agent.WaitNote(func(m acptest.Msg) bool {
			p := string(m.Params)
			return m.Method == "session/update" && strings.Contains(p, sid) && strings.Contains(p, text) && !seen[p]
		})
		seen[string(m.Params)] = true
	}
	const waiting = "waiting for a command of another session"
	// cardFirst checks that A's last waiting note is on a card the editor
	// was shown before it.
	cardFirst := func() {
		t.Helper()
		cards := map[string]bool{}
		var last string
		for _, m := range a.Notes() {
			var p struct {
				Update struct {
					Kind string `json:"sessionUpdate"`
					ID   string `json:"toolCallId"`
				} `json:"update"`
			}
			json.Unmarshal(m.Params, &p)
			switch {
			case p.Update.Kind == "tool_call":
				cards[p.Update.ID] = true
			case strings.Contains(string(m.Params), waiting):
				last = p.Update.ID
				if !cards[last] {
					t.Errorf("the waiting note came before its card %s", last)
				}
			}
		}
		if last == "" {
			t.Error("no waiting note")
		}
	}
	read := func() string {
		data, _ := os.ReadFile(filepath.Join(proj, "a.txt"))
		return string(data)
	}

	// B's command ends while A waits: the edit goes through.
	_, heldB := b.Request("session/prompt", acptest.PromptParams(sidB, "HOLD-1"))
	newNote(b, sidB, "holding HOLD-1")
	_, editedA := a.Request("session/prompt", acptest.PromptParams(sidA, "EDIT-1"))
	newNote(a, sidA, waiting)
	cardFirst()
	if err := os.WriteFile(filepath.Join(parent, "stop1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, rerr := b.Wait(heldB); rerr != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("B's command answered %s %+v", res, rerr)
	}
	if res, rerr := a.Wait(editedA); rerr != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("A's first edit answered %s %+v", res, rerr)
	}
	if out, _ := results(t, a.DB, sidA)[0]["output"].(string); !strings.Contains(out, "Edited a.txt (through the editor)") {
		t.Errorf("A's first edit, once B's command ended: %s", out)
	}
	if got := read(); got != "two\n" {
		t.Errorf("a.txt holds %q after the first edit", got)
	}

	// B's command does not end: A's edit gives up, and writes nothing.
	_, heldB = b.Request("session/prompt", acptest.PromptParams(sidB, "HOLD-2"))
	newNote(b, sidB, "holding HOLD-2")
	_, editedA = a.Request("session/prompt", acptest.PromptParams(sidA, "EDIT-2"))
	newNote(a, sidA, waiting)
	cardFirst()
	// A hang guard, not a timing assertion: the bound is 30 s.
	m, err := a.Conn.Wait(editedA, 2*time.Minute)
	if err != nil {
		t.Fatalf("A's edit still waits for B's command after two minutes: the wait has no bound (%v)", err)
	}
	if m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
		t.Fatalf("A's second edit answered %s %+v", m.Result, m.Error)
	}
	rs := results(t, a.DB, sidA)
	out, _ := rs[len(rs)-1]["output"].(string)
	if isErr, _ := rs[len(rs)-1]["is_error"].(bool); !isErr || !strings.Contains(out, "was still running after 30s") || !strings.Contains(out, "nothing was changed") {
		t.Errorf("A's edit that gave up: %q (error %v)", out, isErr)
	}
	if got := read(); got != "two\n" {
		t.Errorf("a.txt holds %q after the edit that gave up", got)
	}
	if err := os.WriteFile(filepath.Join(parent, "stop2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, rerr := b.Wait(heldB); rerr != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("B's second command answered %s %+v", res, rerr)
	}
}
