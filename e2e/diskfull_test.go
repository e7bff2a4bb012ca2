package e2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// diskScenario runs a command and, in the same message, a second one the
// turn never reaches when the first one's result cannot be committed;
// then it answers a second prompt.
func diskScenario(command string) string {
	cmd, _ := json.Marshal(command)
	return `{"turns": [
  {"match": "run it", "calls": [
    {"text": "Running.", "tool_calls": [
      {"name": "run_command", "input": {"command": ` + string(cmd) + `}},
      {"name": "run_command", "input": {"command": "echo never >> never.log"}}
    ]},
    {"text": "It ran."}
  ]},
  {"match": "and now", "calls": [{"text": "Carrying on."}]}
]}`
}

// openCards lists the tool calls whose last status the editor was told is
// still pending or in progress.
func openCards(ups []acptest.Update) []string {
	last := map[string]string{}
	for _, u := range ups {
		if u.Kind != "tool_call" && u.Kind != "tool_call_update" {
			continue
		}
		id, _ := u.Fields["toolCallId"].(string)
		if st, _ := u.Fields["status"].(string); st != "" {
			last[id] = st
		}
	}
	var open []string
	for id, st := range last {
		if st == "pending" || st == "in_progress" {
			open = append(open, id+" "+st)
		}
	}
	sort.Strings(open)
	return open
}

// cardStatus lists the last status the updates gave each tool card, in
// the order the cards appeared.
func cardStatus(ups []acptest.Update) []string {
	var ids []string
	last := map[string]string{}
	for _, u := range ups {
		if u.Kind != "tool_call" && u.Kind != "tool_call_update" {
			continue
		}
		id, _ := u.Fields["toolCallId"].(string)
		if _, ok := last[id]; !ok {
			ids = append(ids, id)
		}
		if st, _ := u.Fields["status"].(string); st != "" {
			last[id] = st
		}
	}
	var out []string
	for _, id := range ids {
		out = append(out, last[id])
	}
	return out
}

// runIntoFullDisk starts a session in full-auto and sends the prompt whose
// command's result cannot be committed; it checks that the prompt is
// answered with the error and that no tool card is left open.
func runIntoFullDisk(t *testing.T, a *acptest.Agent, ws string) string {
	t.Helper()
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	_, err := a.Call("session/prompt", acptest.PromptParams(sid, "run it"))
	if err == nil {
		t.Fatalf("the prompt whose commit failed was answered without an error; log: %v", kinds(events(t, a, sid)))
	}
	t.Logf("the prompt was answered: %v", err)
	for _, s := range []string{"disk is full", "next prompt"} {
		if !strings.Contains(err.Message, s) {
			t.Errorf("the error does not say %q: %s", s, err.Message)
		}
	}
	ups := a.Updates(sid)
	if open := openCards(ups); len(open) > 0 {
		t.Errorf("tool cards left open after the failed commit: %v", open)
	}
	if st := cardStatus(ups); strings.Join(st, " ") != "failed failed" {
		t.Errorf("the two calls' cards end %v, want both failed", st)
	}
	return sid
}

// checkClosedAsUnknown checks the log once space is back: the command has
// one result, outcome unknown (never cancelled_by_user), the call never
// reached is not run, and the turn is closed as interrupted before the
// next prompt.
func checkClosedAsUnknown(t *testing.T, log []loggedEvent, says string) {
	t.Helper()
	var results []map[string]any
	closed, prompts := false, 0
	for _, e := range log {
		var p map[string]any
		json.Unmarshal(e.Payload, &p)
		switch e.Kind {
		case "user_message":
			prompts++
			if prompts == 2 && !closed {
				t.Errorf("the second prompt was recorded before the first turn was closed: %v", kinds(log))
			}
		case "tool_result":
			results = append(results, p)
		case "turn_finished":
			if prompts == 1 {
				if p["stop_reason"] != "interrupted" {
					t.Errorf("the first turn finished %v, want interrupted", p["stop_reason"])
				}
				closed = true
			}
		}
	}
	if len(results) != 2 {
		t.Fatalf("the log holds %d tool results, want one for each call: %v", len(results), kinds(log))
	}
	t.Logf("log once space is back: %v; results: %q, %q", kinds(log), results[0]["output"], results[1]["output"])
	r := results[0]
	out, _ := r["output"].(string)
	if r["status"] != "unknown" || !strings.Contains(out, says) || strings.Contains(out, "cancelled_by_user") {
		t.Errorf("the command's result = %v %q, want unknown saying %q", r["status"], out, says)
	}
	if r := results[1]; r["status"] != "cancelled" || !strings.HasPrefix(r["output"].(string), "not run") {
		t.Errorf("the call never reached: result %v %q, want not run", r["status"], r["output"])
	}
	if !closed {
		t.Errorf("the first turn was never closed: %v", kinds(log))
	}
}

// checkReplay checks what session/load replays: the card is closed.
func checkReplay(t *testing.T, ups []acptest.Update) {
	t.Helper()
	if open := openCards(ups); len(open) > 0 {
		t.Errorf("session/load replays open tool cards: %v", open)
	}
	tr := strings.Join(acptest.Transcript(ups), "\n")
	if !strings.Contains(tr, `"status":"failed"`) || !strings.Contains(tr, "outcome unknown") {
		t.Errorf("the replay does not show the command's unknown outcome:\n%s", tr)
	}
}

func TestFailedCommitClosesTheTurnAndIsRecordedOnceSpaceIsBack(t *testing.T) {
	model := acptest.Scenario(t, diskScenario("echo ran >> ran.log"))
	// A clean run says which event the command's result is.
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if got := a.Prompt(sid, "run it"); got != "end_turn" {
		t.Fatalf("clean run: stopReason %q", got)
	}
	n := 0
	for i, e := range events(t, a, sid) {
		if e.Kind == "tool_result" {
			n = i + 1
			break
		}
	}
	if n == 0 {
		t.Fatalf("the clean run has no tool result")
	}
	fault := fmt.Sprint("nospace:", n)

	for _, then := range []string{"next prompt", "session/load", "restart"} {
		t.Run(then, func(t *testing.T) {
			ws := acptest.Workspace(t, nil)
			a := acptest.Start(t, acptest.Options{Model: model, Env: []string{"BRIDLE_FAULT=" + fault}})
			sid := runIntoFullDisk(t, a, ws)
			if got := readFile(t, ws, "ran.log"); got != "ran\n" {
				t.Fatalf("ran.log = %q: the command should have run once", got)
			}
			// The fault is spent: space is back.
			b, says := a, "outcome unknown: it ran, but bridle could not record its result"
			load := func() []acptest.Update {
				seen := len(b.Updates(sid))
				b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
				return b.Updates(sid)[seen:]
			}
			var replay []acptest.Update
			switch then {
			case "session/load":
				replay = load()
			case "restart":
				a.Kill()
				b = acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
				b.Initialize()
				says = "outcome unknown: interrupted by a restart"
				replay = load()
			}
			if got := b.Prompt(sid, "and now"); got != "end_turn" {
				t.Fatalf("the prompt once space is back: stopReason %q", got)
			}
			if replay == nil {
				replay = load()
			}
			checkClosedAsUnknown(t, events(t, b, sid), says)
			checkReplay(t, replay)
			if got := readFile(t, ws, "ran.log"); got != "ran\n" {
				t.Errorf("ran.log = %q: the command ran again", got)
			}
			if got := readFile(t, ws, "never.log"); got != "" {
				t.Errorf("the call after the failed commit ran: never.log = %q", got)
			}
			b.AssertValid(t)
		})
	}
}
