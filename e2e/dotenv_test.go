package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// leaks returns where each value was seen outside its markers: the
// requests sent to the model, the session's log and what the editor was
// sent.
func leaks(t *testing.T, a *acptest.Agent, sid, requests string, values map[string]string) []string {
	t.Helper()
	events, rerr := a.Call("_bridle/events", map[string]any{"sessionId": sid})
	if rerr != nil {
		t.Fatal(rerr)
	}
	where := map[string][]byte{"the session's log": events}
	where["the requests to the model"], _ = os.ReadFile(requests)
	var sent bytes.Buffer
	for _, s := range a.Sent() {
		sent.Write(s.Raw)
	}
	where["what the editor was sent"] = sent.Bytes()
	var out []string
	for name, v := range values {
		for w, data := range where {
			if n := bytes.Count(data, []byte(v)); n > 0 {
				out = append(out, fmt.Sprintf("%s (%d times in %s)", name, n, w))
			}
		}
	}
	return out
}

// wantRedacted fails t for each of values seen outside its markers
// (leaks), and for each of markers the session's log holds fewer than
// min times (once per read or command that showed the file).
func wantRedacted(t *testing.T, a *acptest.Agent, sid, requests string, values map[string]string, min int, markers ...string) {
	t.Helper()
	for _, l := range leaks(t, a, sid, requests, values) {
		t.Errorf("leaked: %s", l)
	}
	log, rerr := a.Call("_bridle/events", map[string]any{"sessionId": sid})
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, m := range markers {
		if n := strings.Count(string(log), m); n < min {
			t.Errorf("the log holds %s %d times, want it at least %d times", m, n, min)
		}
	}
}

// beyondScenario reads, then prints with a command, three .env files the
// walk per session never reached: twelve directories down, after 5,100
// directories, and the 111th .env file.
const beyondScenario = `{"turns": [{"calls": [
  {"tool_calls": [
    {"name": "read_file", "input": {"path": "d/d/d/d/d/d/d/d/d/d/d/d/.env"}},
    {"name": "read_file", "input": {"path": "zz/.env"}},
    {"name": "read_file", "input": {"path": "many/p110/.env"}},
    {"name": "run_command", "input": {"command": "cat d/d/d/d/d/d/d/d/d/d/d/d/.env zz/.env many/p110/.env"}},
    {"name": "read_file", "input": {"path": "notes.txt"}}
  ]},
  {"text": "Done."}
]}]}`

// The .env files of these tests name their values as no secret is named:
// .env files exist to hold secrets, and their values are redacted by
// their own, whatever their names (an assignment like API_KEY=… is
// redacted by its name anyway).

// TestDotEnvBeyondTheOldBoundsThroughTheBinary: a .env file is redacted
// from file reads and command output wherever it is below the workspace:
// deeper than eight directories, after 5,000 directories, past the 100th
// .env file (the bounds of the walk each session did at its start). A
// .env that is a link out of the workspace is not followed (a value of
// the file it names, which notes.txt holds too, is not known), and one
// that is a FIFO is not waited on.
func TestDotEnvBeyondTheOldBoundsThroughTheBinary(t *testing.T) {
	values := map[string]string{
		"the deep .env's value":       "deep-dotenv-" + "Rk38Wq1Z",
		"the late .env's value":       "late-dotenv-" + "Pv62Ln8Y",
		"the 111th .env file's value": "many-dotenv-" + "Hs47Tc5M",
	}
	files := map[string]string{
		"d/d/d/d/d/d/d/d/d/d/d/d/.env": "DEEP_SETTING=" + values["the deep .env's value"] + "\n",
		"zz/.env":                      "LATE_SETTING=" + values["the late .env's value"] + "\n",
	}
	for i := range 120 {
		files[fmt.Sprintf("many/p%03d/.env", i)] = fmt.Sprintf("N%d=value-of-file-%03d\n", i, i)
	}
	files["many/p110/.env"] = "MANY_SETTING=" + values["the 111th .env file's value"] + "\n"
	const outsideValue = "outside-" + "Bn29Ke6W"
	files["notes.txt"] = "a value elsewhere: " + outsideValue + "\n"
	ws := acptest.Workspace(t, files)
	outside := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(outside, []byte("OUTSIDE_SETTING="+outsideValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "links"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "links", ".env")); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(ws, "links", ".env.local")); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	for i := range 5100 {
		if err := os.MkdirAll(filepath.Join(ws, "empty", fmt.Sprintf("d%04d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, beyondScenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "show the settings"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	for _, l := range leaks(t, a, sid, requests, values) {
		t.Errorf("leaked: %s", l)
	}
	log, _ := a.Call("_bridle/events", map[string]any{"sessionId": sid})
	if !strings.Contains(string(log), "a value elsewhere: "+outsideValue) {
		t.Errorf("notes.txt was redacted: the .env linked out of the workspace was read")
	}
	for _, marker := range []string{"[REDACTED:d/d/d/d/d/d/d/d/d/d/d/d/.env:DEEP_SETTING]", "[REDACTED:zz/.env:LATE_SETTING]", "[REDACTED:many/p110/.env:MANY_SETTING]"} {
		if n := strings.Count(string(log), marker); n < 2 {
			t.Errorf("the log holds %s %d times, want it in the read and in the command's output", marker, n)
		}
	}
}

// laterScenario: the first turn makes a .env file eleven directories down
// with a command (its value is not in the command), then prints it and
// reads it; the second reads one the user made between the turns.
const laterScenario = `{"turns": [
  {"calls": [
    {"tool_calls": [{"name": "run_command", "input": {"command": "mkdir -p a/b/c/d/e/f/g/h/i/j && printf 'MADE_SETTING=%s%s\\n' made-by-a- command-Zq81Vw3K > a/b/c/d/e/f/g/h/i/j/.env"}}]},
    {"tool_calls": [
      {"name": "run_command", "input": {"command": "cat a/b/c/d/e/f/g/h/i/j/.env"}},
      {"name": "read_file", "input": {"path": "a/b/c/d/e/f/g/h/i/j/.env"}}
    ]},
    {"text": "Made it."}
  ]},
  {"calls": [
    {"tool_calls": [
      {"name": "read_file", "input": {"path": "svc/api/.env.local"}},
      {"name": "run_command", "input": {"command": "cat svc/api/.env.local"}}
    ]},
    {"text": "Read it."}
  ]}
]}`

// TestDotEnvMadeLaterThroughTheBinary: a .env file made after the session
// started counts from then on: one a command made, in the calls after
// it; one the user made between two prompts, in the next turn.
func TestDotEnvMadeLaterThroughTheBinary(t *testing.T) {
	values := map[string]string{
		"the value of the .env a command made": "made-by-a-" + "command-Zq81Vw3K",
		"the value of the .env the user made":  "made-by-the-" + "user-Jm52Xr7B",
	}
	ws := acptest.Workspace(t, map[string]string{"README.md": "# app\n"})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, laterScenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "make the settings"); stop != "end_turn" {
		t.Fatalf("first stopReason = %q", stop)
	}
	if err := os.MkdirAll(filepath.Join(ws, "svc", "api"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "svc", "api", ".env.local"), []byte("USER_SETTING="+values["the value of the .env the user made"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if stop := a.Prompt(sid, "read the user's settings"); stop != "end_turn" {
		t.Fatalf("second stopReason = %q", stop)
	}
	wantRedacted(t, a, sid, requests, values, 2, "[REDACTED:a/b/c/d/e/f/g/h/i/j/.env:MADE_SETTING]", "[REDACTED:svc/api/.env.local:USER_SETTING]")
}

// sameMessageScenario: one assistant message whose first call makes a
// .env file with a command (its value is not in the command) and whose
// next calls print it and read it.
const sameMessageScenario = `{"turns": [{"calls": [
  {"tool_calls": [
    {"name": "run_command", "input": {"command": "printf 'MADE_SETTING=%s%s\\n' same-message- value-Qx71Wk2P > .env"}},
    {"name": "run_command", "input": {"command": "cat .env"}},
    {"name": "read_file", "input": {"path": ".env"}}
  ]},
  {"text": "Made it."}
]}]}`

// TestDotEnvMadeInTheSameMessageThroughTheBinary: a .env file made by a
// call counts for the calls after it in the same message, although their
// cards were shown (and their Envs made) when the message came, before
// the file existed.
func TestDotEnvMadeInTheSameMessageThroughTheBinary(t *testing.T) {
	values := map[string]string{"the value of the .env the first call made": "same-message-" + "value-Qx71Wk2P"}
	ws := acptest.Workspace(t, map[string]string{"README.md": "# app\n"})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, sameMessageScenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "make the settings"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	wantRedacted(t, a, sid, requests, values, 2, "[REDACTED:.env:MADE_SETTING]")
}
