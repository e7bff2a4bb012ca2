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

// crashScenario has reads, an edit, a command that appends to a file (so a
// second run would show), a slow answer the driver cancels, and a final
// write. Edits and commands need approval in the default mode.
const crashScenario = `{"turns": [
  {"match": "do the work", "calls": [
    {"text": "Working.", "tool_calls": [
      {"name": "read_file", "input": {"path": "notes.txt"}},
      {"name": "edit_file", "input": {"path": "notes.txt", "old_string": "hello", "new_string": "hello, edited"}},
      {"name": "run_command", "input": {"command": "echo ran >> ran.log"}}
    ]},
    {"text": "Done with the work."}
  ]},
  {"match": "continue the work", "calls": [{"text": "The results are in the log; nothing left to do."}]},
  {"match": "count slowly", "calls": [{"text": ["one ", "two ", "three ", "four ", "five ", "six ", "seven "], "delay_ms": 120}]},
  {"match": "finish", "calls": [
    {"tool_calls": [{"name": "write_file", "input": {"path": "done.txt", "content": "finished\n"}}]},
    {"text": "All done."}
  ]}
]}`

// crashPrompts ends with a rewind to before "finish": its write is
// taken back, so the walk covers a rewind's plan, its files and its end.
var crashPrompts = []string{"do the work", "count slowly", "finish", "/rewind 3"}

// drive sends prompts, cancelling the slow one after its first fragment.
// It stops early, returning false, if the process dies.
func drive(t *testing.T, a *acptest.Agent, sid string, prompts []string) (finished bool) {
	for i := range prompts {
		_, answer := a.Request("session/prompt", acptest.PromptParams(sid, prompts[i]))
		if prompts[i] == "count slowly" {
			if !waitOrExit(a, func(m acptest.Msg) bool { return strings.Contains(string(m.Params), `"one "`) }) {
				return false
			}
			a.Notify("session/cancel", map[string]string{"sessionId": sid})
		}
		select {
		case m, ok := <-answer:
			if !ok {
				return false
			}
			if m.Error != nil {
				t.Fatalf("prompt %q: %v", prompts[i], m.Error)
			}
		case <-a.Exited():
			return false
		case <-time.After(30 * time.Second):
			t.Fatalf("prompt %q: no answer", prompts[i])
		}
	}
	return true
}

// waitOrExit waits for a notification, or returns false if the process
// died first.
func waitOrExit(a *acptest.Agent, ok func(acptest.Msg) bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range a.Notes() {
			if ok(m) {
				return true
			}
		}
		select {
		case <-a.Exited():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return false
}

type loggedEvent struct {
	Seq     int64           `json:"seq"`
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload"`
}

func events(t *testing.T, a *acptest.Agent, sid string) []loggedEvent {
	res, err := a.Call("_bridle/events", map[string]any{"sessionId": sid})
	if err != nil {
		t.Fatalf("_bridle/events: %v", err)
	}
	var r struct{ Events []loggedEvent }
	json.Unmarshal(res, &r)
	return r.Events
}

func kinds(evs []loggedEvent) []string {
	var k []string
	for _, e := range evs {
		k = append(k, e.Kind)
	}
	return k
}

// runOnce plays the whole session; with a fault it crashes, restarts,
// loads and finishes. It returns the final log and the workspace.
func runOnce(t *testing.T, fault string) (log []loggedEvent, ws string, reasked int) {
	ws = acptest.Workspace(t, map[string]string{"notes.txt": "hello\n"})
	model := acptest.Scenario(t, crashScenario)
	var env []string
	if fault != "" {
		env = append(env, "BRIDLE_FAULT="+fault)
	}
	a := acptest.Start(t, acptest.Options{Model: model, Env: env})
	a.Initialize()
	_, answer := a.Request("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})
	var sid string
	if m, ok := <-answer; ok {
		var r struct{ SessionID string }
		json.Unmarshal(m.Result, &r)
		sid = r.SessionID
	}
	if sid != "" && drive(t, a, sid, crashPrompts) {
		if fault != "" {
			return nil, ws, -1 // the fault point is past the end of the session
		}
		return events(t, a, sid), ws, 0
	}
	reasked = 0
	a.WaitExit()

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	if sid == "" {
		// The process died before answering session/new: the editor finds
		// the session in the list.
		var list struct {
			Sessions []struct{ SessionID string }
		}
		b.MustCall("session/list", map[string]any{"cwd": ws}, &list)
		if len(list.Sessions) != 1 {
			t.Fatalf("session/list after a crash in session/new: %+v", list)
		}
		sid = list.Sessions[0].SessionID
	}
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	// Recovery may ask a question again and run the call; wait until the
	// turn the crash cut short is closed.
	var evs []loggedEvent
	for deadline := time.Now().Add(20 * time.Second); ; {
		evs = events(t, b, sid)
		if last := evs[len(evs)-1].Kind; last == "turn_finished" || last == "session_started" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recovered turn never closed: %v", kinds(evs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, m := range b.Sent() {
		if strings.Contains(string(m.Raw), `"session/request_permission"`) {
			reasked++
		}
	}
	// The editor goes on from where the log says the session is. A turn the
	// crash cut short is closed; the user asks for it to be continued.
	// A rewind records no prompt: its end (or its plan, which the restart
	// finished) says it was asked.
	prompts, rewound := 0, false
	for _, e := range evs {
		switch e.Kind {
		case "user_message":
			prompts++
		case "rewound":
			rewound = true
		}
	}
	done := prompts
	if rewound {
		done++
	}
	rest := crashPrompts[done:]
	if last := evs[len(evs)-1]; !rewound && last.Kind == "turn_finished" && strings.Contains(string(last.Payload), `"interrupted"`) {
		again := crashPrompts[prompts-1]
		if again == "do the work" {
			again = "continue the work"
		}
		rest = append([]string{again}, rest...)
	}
	if !drive(t, b, sid, rest) {
		t.Fatalf("bridle died after the restart:\n%s", b.Stderr())
	}
	b.AssertValid(t)
	return events(t, b, sid), ws, reasked
}

func TestCrashAnywhereLosesNothingAndRepeatsNothing(t *testing.T) {
	clean, cleanWS, _ := runOnce(t, "")
	cleanKinds := kinds(clean)
	if got := readFile(t, cleanWS, "notes.txt"); got != "hello, edited\n" {
		t.Fatalf("clean run: notes.txt = %q", got)
	}
	if got := readFile(t, cleanWS, "ran.log"); got != "ran\n" {
		t.Fatalf("clean run: ran.log = %q", got)
	}
	tools := 0
	for _, e := range clean {
		if e.Kind == "tool_started" {
			tools++
		}
	}
	var faults []string
	for n := 1; n <= len(clean); n++ {
		faults = append(faults, fmt.Sprint("event:", n))
	}
	for n := 1; n <= tools; n++ {
		faults = append(faults, fmt.Sprint("tool:", n))
	}
	exercised := 0
	seen := map[string]int{}
	for _, fault := range faults {
		t.Run(fault, func(t *testing.T) {
			log, ws, reasked := runOnce(t, fault)
			if log == nil {
				t.Fatalf("the session finished without reaching fault point %s", fault)
			}
			exercised++
			checkCrashRun(t, fault, cleanKinds, log, ws)
			for _, e := range log {
				for outcome, says := range recoveryOutcomes {
					if e.Kind == "tool_result" && strings.Contains(string(e.Payload), says) {
						seen[outcome]++
					}
				}
			}
			if reasked > 0 {
				seen["question asked again"]++
			}
		})
	}
	t.Logf("crash points exercised: %d (%d event boundaries, %d inside tools); recoveries: %v", exercised, len(clean), tools, seen)
	for outcome := range recoveryOutcomes {
		if seen[outcome] == 0 {
			t.Errorf("no crash point exercised the recovery %q", outcome)
		}
	}
	if seen["question asked again"] == 0 {
		t.Errorf("no crash point left a question to ask again")
	}
}

// recoveryOutcomes are what a restart may record for a call, and the words
// that show it in the result.
var recoveryOutcomes = map[string]string{
	"read run again":             "run again after a restart",
	"edit found applied":         "applied before bridle restarted",
	"edit applied after restart": "applied after a restart",
	"command outcome unknown":    "outcome unknown: interrupted by a restart",
	"call never reached":         "not run: bridle restarted",
}

func checkCrashRun(t *testing.T, fault string, clean []string, log []loggedEvent, ws string) {
	t.Helper()
	got := kinds(log)
	// The committed prefix is the clean run's: nothing lost, nothing reordered.
	if strings.HasPrefix(fault, "event:") {
		var n int
		fmt.Sscanf(fault, "event:%d", &n)
		if len(got) < n || strings.Join(got[:n], " ") != strings.Join(clean[:n], " ") {
			t.Fatalf("the log after a crash at %s is not a prefix of a clean run:\nclean: %v\ngot:   %v", fault, clean, got)
		}
	}
	// Every call has exactly one result, and the session finished.
	results := map[string]map[string]any{}
	started := map[string]bool{}
	for _, e := range log {
		var p map[string]any
		json.Unmarshal(e.Payload, &p)
		switch e.Kind {
		case "tool_result":
			key := p["key"].(string)
			if results[key] != nil {
				t.Fatalf("call %s has two results", key)
			}
			results[key] = p
		case "tool_started":
			key := p["key"].(string)
			if started[key] {
				t.Fatalf("call %s started twice", key)
			}
			started[key] = true
		}
	}
	if got[len(got)-1] != "turn_finished" {
		t.Fatalf("the session did not finish: %v", got)
	}
	byTool := func(name string) map[string]any {
		for _, r := range results {
			if r["name"] == name {
				return r
			}
		}
		return nil
	}

	// The edit landed at most once, and the log says whether it did.
	notes := readFile(t, ws, "notes.txt")
	edit := byTool("edit_file")
	switch {
	case notes != "hello\n" && notes != "hello, edited\n":
		t.Fatalf("notes.txt = %q: the edit was applied twice", notes)
	case edit == nil:
		if notes != "hello\n" {
			t.Fatalf("notes.txt was edited but the log has no result for the edit")
		}
	case edit["status"] == "completed" && notes != "hello, edited\n":
		t.Fatalf("the log says the edit completed but notes.txt = %q (%v)", notes, edit["output"])
	case edit["status"] != "completed" && edit["status"] != "unknown" && notes != "hello\n":
		t.Fatalf("the log says the edit did not happen (%v) but notes.txt = %q", edit["status"], notes)
	}

	// The appending command ran at most once, or the model was told the
	// outcome is unknown; and the log never claims what did not happen.
	ran := strings.Count(readFile(t, ws, "ran.log"), "ran\n")
	cmd := byTool("run_command")
	switch {
	case ran > 1 && (cmd == nil || cmd["status"] != "unknown"):
		t.Fatalf("the command ran %d times and the model was not told", ran)
	case cmd != nil && cmd["status"] == "completed" && ran != 1:
		t.Fatalf("the log says the command completed but it ran %d times", ran)
	case cmd != nil && (cmd["status"] == "cancelled" || cmd["status"] == "denied") && ran != 0:
		t.Fatalf("the log says the command did not run (%v) but it ran %d times", cmd["status"], ran)
	}
	// The last turn's write happened, and the rewind took it back, once:
	// one plan, one end, and the file gone.
	if w := byTool("write_file"); w == nil || w["status"] != "completed" {
		t.Fatalf("the last turn's write did not complete: %v", w)
	}
	plans, ends := 0, 0
	for _, e := range log {
		switch e.Kind {
		case "rewind_started":
			plans++
		case "rewound":
			ends++
			if !strings.Contains(string(e.Payload), "done.txt") {
				t.Fatalf("the rewind did not put back done.txt: %s", e.Payload)
			}
		}
	}
	if plans != 1 || ends != 1 {
		t.Fatalf("%d rewind plans and %d ends, want one of each: %v", plans, ends, got)
	}
	if _, err := os.Stat(filepath.Join(ws, "done.txt")); !os.IsNotExist(err) {
		t.Fatalf("done.txt is still there after the rewind (%v)", err)
	}
	if readFile(t, ws, "notes.txt") != "hello, edited\n" && edit != nil && edit["status"] == "completed" {
		t.Fatalf("the rewind to before prompt 3 touched notes.txt")
	}
}

func readFile(t *testing.T, dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
