package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// windowScenario prints a .env value after padding that puts it across
// the 64 KiB boundaries of run_command's output (65,530 and 131,060
// bytes of x before "K=value"), and then the value over and over with
// nothing between. Each output is written to a file first and printed by
// one cat, so that it reaches bridle in full pipe reads, as a fast
// command's output does, rather than as the shell happens to write it.
var windowScenario = `{
  "turns": [
    {"calls": [
      {"tool_calls": [
        {"name": "run_command", "input": {"command": "{ head -c 65530 /dev/zero | tr '\\0' x; cat .env; } > \"$TMPDIR/out\"; cat \"$TMPDIR/out\""}},
        {"name": "run_command", "input": {"command": "{ head -c 131060 /dev/zero | tr '\\0' x; cat .env; } > \"$TMPDIR/out\"; cat \"$TMPDIR/out\""}},
        {"name": "run_command", "input": {"command": "v=$(cut -d= -f2 .env); i=0; while [ $i -lt 9000 ]; do printf %s \"$v\"; i=$((i+1)); done > \"$TMPDIR/out\"; cat \"$TMPDIR/out\""}}
      ]},
      {"text": "Done."}
    ]}
  ]
}`

// TestStreamWindowSecretThroughTheBinary: a .env value that command
// output puts across a redaction window's boundary reaches neither the
// editor, nor the stored artifacts, nor the log, nor the model.
func TestStreamWindowSecretThroughTheBinary(t *testing.T) {
	value := "dotenvwin-" + "Hx7Pq2Zr9Lk4Vm"
	ws := acptest.Workspace(t, map[string]string{".env": "K=" + value + "\n"})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, windowScenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "print the config"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	events, rerr := a.Call("_bridle/events", map[string]any{"sessionId": sid})
	if rerr != nil {
		t.Fatal(rerr)
	}
	a.CloseStdin()

	marker := []byte("[REDACTED:.env:K]")
	var results []string
	for _, u := range a.Updates(sid) {
		if u.Kind == "tool_call_update" && u.Fields["status"] != nil && u.Fields["status"] != "in_progress" {
			b, _ := json.Marshal(u.Fields)
			results = append(results, string(b))
		}
	}
	if len(results) != 3 {
		t.Fatalf("%d finished tool calls, want 3", len(results))
	}
	for i, r := range results {
		if !strings.Contains(r, string(marker)) {
			t.Errorf("tool result %d as the editor saw it holds no redaction marker: %.300s…", i, r)
		}
	}

	where := map[string][]byte{"_bridle/events": events}
	where["provider requests"], _ = os.ReadFile(requests)
	var sent bytes.Buffer
	for _, s := range a.Sent() {
		sent.Write(s.Raw)
	}
	where["sent to the editor"] = sent.Bytes()
	artifacts := 0
	filepath.Walk(filepath.Dir(a.DB), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			where[p], _ = os.ReadFile(p)
			if strings.Contains(p, string(filepath.Separator)+"artifacts"+string(filepath.Separator)) {
				artifacts++
				if !bytes.Contains(where[p], marker) {
					t.Errorf("artifact %s holds no redaction marker", p)
				}
			}
		}
		return nil
	})
	if artifacts != 3 {
		t.Errorf("%d artifacts, want one for each of the 3 long outputs", artifacts)
	}
	if !bytes.Contains(where["provider requests"], marker) {
		t.Errorf("the provider requests hold no redaction marker")
	}
	for name, data := range where {
		if bytes.Contains(data, []byte(value)) {
			t.Errorf("%s holds the .env value", name)
		}
	}
}

// promptScenario answers the first prompt by printing the nested .env
// file, then the second with text.
var promptScenario = `{
  "turns": [
    {"calls": [
      {"tool_calls": [{"name": "run_command", "input": {"command": "cat services/api/.env.local"}}]},
      {"text": "Noted."}
    ]},
    {"calls": [{"text": "Still noted."}]}
  ]
}`

// TestPromptSecretThroughTheBinary: a secret the user pastes into a
// prompt, here the value of bridle's own ANTHROPIC_API_KEY and of a .env
// file below the workspace, is redacted before the prompt is logged,
// titled, sent to the model or replayed, and the user is told so.
func TestPromptSecretThroughTheBinary(t *testing.T) {
	apiKey := "sk-ant-test-" + strings.Repeat("Kp7Wz", 8)
	dotValue := "dotnested-" + "Mq4Rt8Vx2"
	ws := acptest.Workspace(t, map[string]string{"services/api/.env.local": "DB_PASS=" + dotValue + "\n"})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	env := []string{"ANTHROPIC_API_KEY=" + apiKey, "BRIDLE_RECORD_REQUESTS=" + requests}
	model := acptest.Scenario(t, promptScenario)
	a := acptest.Start(t, acptest.Options{Model: model, Env: env})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "key "+apiKey+" fails, and the db password "+dotValue+" too"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	if stop := a.Prompt(sid, "/decision rotate "+apiKey+" on Monday"); stop != "end_turn" {
		t.Fatalf("second stopReason = %q", stop)
	}
	note := "[bridle: 2 secrets in your prompt were redacted before they were stored or sent to the model: env:ANTHROPIC_API_KEY, services/api/.env.local:DB_PASS]"
	pinNote := "[bridle: 1 secret in your prompt was redacted before it was stored or sent to the model: env:ANTHROPIC_API_KEY]"
	live := strings.Join(acptest.Transcript(a.Updates(sid)), "\n")
	if !strings.Contains(live, "agent_message_chunk: "+note) || !strings.Contains(live, pinNote) {
		t.Errorf("the user was not told what was redacted:\n%s", live)
	}
	events, rerr := a.Call("_bridle/events", map[string]any{"sessionId": sid})
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, want := range []string{`key [REDACTED:env:ANTHROPIC_API_KEY] fails, and the db password [REDACTED:services/api/.env.local:DB_PASS] too`,
		`"redacted":["env:ANTHROPIC_API_KEY","services/api/.env.local:DB_PASS"]`, `rotate [REDACTED:env:ANTHROPIC_API_KEY] on Monday`,
		`DB_PASS=[REDACTED:services/api/.env.local:DB_PASS]`} {
		if !strings.Contains(string(events), want) {
			t.Errorf("_bridle/events lacks %s:\n%s", want, events)
		}
	}
	var list struct {
		Sessions []struct {
			Title string `json:"title"`
		} `json:"sessions"`
	}
	a.MustCall("session/list", map[string]any{}, &list)
	if len(list.Sessions) != 1 || !strings.HasPrefix(list.Sessions[0].Title, "key [REDACTED:env:ANTHROPIC_API_KEY] fails") {
		t.Errorf("session/list = %+v", list)
	}
	a.CloseStdin()

	// Another process loads the session: the replay shows the redacted
	// prompt and the same notes.
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model, Env: env})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	replay := strings.Join(acptest.Transcript(b.Updates(sid)), "\n")
	for _, want := range []string{"user_message_chunk: key [REDACTED:env:ANTHROPIC_API_KEY] fails", "agent_message_chunk: " + note, pinNote,
		"user_message_chunk: /decision rotate [REDACTED:env:ANTHROPIC_API_KEY] on Monday"} {
		if !strings.Contains(replay, want) {
			t.Errorf("the replay lacks %q:\n%s", want, replay)
		}
	}
	b.CloseStdin()

	where := everywhere(events, requests, a, b)
	if !bytes.Contains(where["provider requests"], []byte("[REDACTED:env:ANTHROPIC_API_KEY]")) {
		t.Errorf("the provider requests hold no marker: %.300s", where["provider requests"])
	}
	for name, data := range where {
		for _, s := range []string{apiKey, dotValue} {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds %q", name, s)
			}
		}
	}
}

// everywhere is every place a secret could end up after a session: the
// log as _bridle/events gave it, the provider requests recorded, what
// every process sent the editor and logged, and every file in the data
// directory (the database, artifacts, images).
func everywhere(events []byte, requests string, agents ...*acptest.Agent) map[string][]byte {
	where := map[string][]byte{"_bridle/events": events}
	where["provider requests"], _ = os.ReadFile(requests)
	var sent, logged bytes.Buffer
	for _, a := range agents {
		for _, s := range a.Sent() {
			sent.Write(s.Raw)
		}
		logged.WriteString(a.Stderr())
	}
	where["sent to the editor"], where["bridle's log (stderr)"] = sent.Bytes(), logged.Bytes()
	filepath.Walk(filepath.Dir(agents[0].DB), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			where[p], _ = os.ReadFile(p)
		}
		return nil
	})
	return where
}
