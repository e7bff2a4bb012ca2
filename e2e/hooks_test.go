package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// writeSettings writes the user's settings.json under home.
func writeSettings(t *testing.T, home, settings string) {
	t.Helper()
	dir := filepath.Join(home, ".config", "bridle")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
}

// text is every text part of a recorded request's messages, a line each.
func (r modelRequest) text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			b.WriteString(p.Text + "\n")
		}
	}
	return b.String()
}

// hookRuns are the log's hook_ran payloads.
func hookRuns(t *testing.T, db, sid string) []map[string]any {
	var out []map[string]any
	for _, e := range acptest.Log(t, db, sid) {
		if e["kind"] == "hook_ran" {
			out = append(out, e["payload"].(map[string]any))
		}
	}
	return out
}

// The user's hooks of TestHooksThroughTheBinary: one refuses rm -rf
// with a reason, one hangs on reads (and is timed out), one formats
// (trims trailing blanks in) a written file and says so.
const userHooks = `{"hooks": {
	"PreToolUse": [
		{"matcher": "run_command", "command": "if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here: delete files one by one' >&2; exit 2; fi"},
		{"matcher": "read_file", "command": "sleep 600", "timeout_seconds": 1}
	],
	"PostToolUse": [
		{"matcher": "write_file|edit_file", "command": "f=$(sed -n 's/.*\"tool_input\":{[^}]*\"path\":\"\\([^\"]*\\)\".*/\\1/p'); sed -i 's/[[:space:]]*$//' \"$f\" && echo \"{\\\"additional_context\\\": \\\"formatted $f\\\"}\""}
	]
}}`

// The write comes last: the file its hook formats changed since the
// model wrote it, which the next request says (a note the scripted
// model takes for a new prompt).
const hooksScenario = `{"turns": [{"calls": [
	{"tool_calls": [{"name": "run_command", "input": {"command": "rm -rf build"}}]},
	{"tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]},
	{"tool_calls": [{"name": "run_command", "input": {"command": "echo ok > ok.txt"}}]},
	{"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "x   \ny  \n"}}]},
	{"text": "hooked"}
]}]}`

// TestHooksThroughTheBinary: the user's hooks run in the box with the
// event on stdin. A PostToolUse hook formats the file an edit wrote and
// its context reaches the model; a PreToolUse hook refuses rm -rf with a
// reason the model reads (and the command does not run); a hook that
// hangs is timed out and the call goes on. Each is recorded as hook_ran,
// and the editor gets a card of kind other for those that refused, added
// context or failed.
func TestHooksThroughTheBinary(t *testing.T) {
	home := t.TempDir()
	writeSettings(t, home, userHooks)
	ws := acptest.Workspace(t, map[string]string{"build/keep.txt": "keep\n", "README.md": "# app\n"})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Home: home, Model: acptest.Scenario(t, hooksScenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "go"); stop != "end_turn" {
		t.Fatalf("the prompt ended %q", stop)
	}
	res := toolResults(t, a.DB, sid)
	if len(res) != 4 {
		t.Fatalf("%d tool results, want 4: %v", len(res), res)
	}
	out := func(i int) string { s, _ := res[i]["output"].(string); return s }
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "x\ny\n" {
		t.Errorf("a.txt after the formatting hook: %q, want %q", b, "x\ny\n")
	}
	if !strings.Contains(out(3), "formatted a.txt") {
		t.Errorf("the write's result lacks the hook's context:\n%s", out(3))
	}
	if res[0]["status"] != "denied" || !strings.Contains(out(0), "rm -rf is not allowed here: delete files one by one") {
		t.Errorf("rm -rf's result: %v %q", res[0]["status"], out(0))
	}
	if _, err := os.Stat(filepath.Join(ws, "build", "keep.txt")); err != nil {
		t.Errorf("the refused rm -rf ran: %v", err)
	}
	if res[1]["status"] != "completed" || !strings.Contains(out(1), "# app") {
		t.Errorf("the read behind a hanging hook: %v %q", res[1]["status"], out(1))
	}
	if _, err := os.Stat(filepath.Join(ws, "ok.txt")); err != nil {
		t.Errorf("the command the hook allowed did not run: %v", err)
	}
	reqs := modelRequests(t, requests)
	last := reqs[len(reqs)-1].text()
	for _, want := range []string{"rm -rf is not allowed here: delete files one by one", "formatted a.txt"} {
		if !strings.Contains(last, want) {
			t.Errorf("the model's last request lacks %q", want)
		}
	}
	runs := hookRuns(t, a.DB, sid)
	verdicts := map[string]int{}
	for _, r := range runs {
		verdicts[fmt.Sprint(r["event"], " ", r["tool"], " ", r["verdict"])]++
		if r["verdict"] == "failed" && !strings.Contains(fmt.Sprint(r["reason"]), "timed out") {
			t.Errorf("the hanging hook's record: %v", r)
		}
	}
	want := map[string]int{
		"PostToolUse write_file context": 1,
		"PreToolUse run_command deny":    1,
		"PreToolUse run_command allow":   1,
		"PreToolUse read_file failed":    1,
	}
	for k, n := range want {
		if verdicts[k] != n {
			t.Errorf("hook_ran %q recorded %d times, want %d (all: %v)", k, verdicts[k], n, verdicts)
		}
	}
	// Cards of kind other for the refusal, the context and the failure.
	cards := 0
	for _, u := range a.Updates(sid) {
		id, _ := u.Fields["toolCallId"].(string)
		if u.Kind == "tool_call" && strings.HasPrefix(id, "hook-") && u.Fields["kind"] == "other" {
			cards++
		}
	}
	if cards != 3 {
		t.Errorf("%d hook cards of kind other, want 3 (refused, context, failed)", cards)
	}
}

// TestProjectHooksWaitForTrust: a project's .bridle/settings.json may
// propose hooks; they do not run until the user lists the project in
// trusted_projects, and then they do.
func TestProjectHooksWaitForTrust(t *testing.T) {
	const scenario = `{"turns": [{"calls": [
		{"tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]},
		{"text": "read"}]}]}`
	ws := acptest.Workspace(t, map[string]string{
		"README.md":             "# app\n",
		".bridle/settings.json": `{"hooks": {"PreToolUse": [{"command": "echo project > project-hook-ran.txt"}]}}`,
	})
	for _, trusted := range []bool{false, true} {
		home := t.TempDir()
		settings := `{}`
		if trusted {
			settings = fmt.Sprintf(`{"trusted_projects": [%q]}`, ws)
		}
		writeSettings(t, home, settings)
		a := acptest.Start(t, acptest.Options{Home: home, Model: acptest.Scenario(t, scenario)})
		a.Initialize()
		sid := a.NewSession(ws)
		if stop := a.Prompt(sid, "read"); stop != "end_turn" {
			t.Fatalf("the prompt ended %q", stop)
		}
		_, err := os.Stat(filepath.Join(ws, "project-hook-ran.txt"))
		runs := hookRuns(t, a.DB, sid)
		switch {
		case !trusted && (err == nil || len(runs) != 0):
			t.Errorf("the project's hook ran in a project the user does not trust (%d recorded)", len(runs))
		case trusted && (err != nil || len(runs) != 1 || runs[0]["whose"] != "project"):
			t.Errorf("the project's hook did not run once trusted: %v, recorded %v", err, runs)
		}
		if !trusted && !strings.Contains(a.Stderr(), "are ignored: a project's hooks are commands its author wrote") {
			t.Errorf("no warning that the project's hooks are ignored:\n%s", a.Stderr())
		}
		a.CloseStdin()
	}
}

// TestHookNotRerunAfterACrash: bridle is killed right after a hook's
// verdict is recorded (BRIDLE_FAULT=hook:1), before the call's result.
// The restarted bridle settles the call (a read runs again) and takes
// the hook's verdict from the log: the hook does not run a second time,
// and its context still reaches the result.
func TestHookNotRerunAfterACrash(t *testing.T) {
	const scenario = `{"turns": [{"calls": [
		{"tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]},
		{"text": "read"}]}]}`
	home := t.TempDir()
	writeSettings(t, home, `{"hooks": {"PostToolUse": [{"matcher": "read_file", "command": "echo ran >> hook-count.txt; echo '{\"additional_context\": \"HOOK-CONTEXT\"}'"}]}}`)
	ws := acptest.Workspace(t, map[string]string{"README.md": "# app\n"})
	model := acptest.Scenario(t, scenario)
	a := acptest.Start(t, acptest.Options{Home: home, Model: model, Env: []string{"BRIDLE_FAULT=hook:1"}})
	a.Initialize()
	sid := a.NewSession(ws)
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "read"))
	if m, ok := <-answer; ok && m.Error == nil {
		t.Fatalf("the prompt ended although bridle was to be killed after the hook: %s", m.Result)
	}
	a.WaitExit()

	b := acptest.Start(t, acptest.Options{Home: home, DB: a.DB, Model: model})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	var res []map[string]any
	for deadline := time.Now().Add(20 * time.Second); len(res) == 0; {
		res = toolResults(t, b.DB, sid)
		if time.Now().After(deadline) {
			t.Fatalf("the call cut short by the crash was never settled: %s", acptest.Kinds(acptest.Log(t, b.DB, sid)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "hook-count.txt")); string(got) != "ran\n" {
		t.Errorf("the hook ran %d times, want once", strings.Count(string(got), "ran"))
	}
	if runs := hookRuns(t, b.DB, sid); len(runs) != 1 {
		t.Errorf("%d hook_ran events, want 1", len(runs))
	}
	if out, _ := res[0]["output"].(string); !strings.Contains(out, "HOOK-CONTEXT") || !strings.Contains(out, "# app") {
		t.Errorf("the recovered read's result: %q", out)
	}
}

// TestHookPointsOfATurn: a SessionStart hook runs once, before the
// session's first prompt; a UserPromptSubmit hook adds context to each
// prompt and refuses one (which is then neither recorded nor sent); a
// Stop hook runs when a turn ends and what it says reaches the model
// with the next prompt. The model reads the contexts after the prompt.
func TestHookPointsOfATurn(t *testing.T) {
	home := t.TempDir()
	writeSettings(t, home, `{"hooks": {
		"SessionStart": [{"command": "echo SESSION-CONTEXT; echo started >> starts.txt"}],
		"UserPromptSubmit": [{"command": "if grep -q FORBIDDEN; then echo 'no forbidden prompts' >&2; exit 2; fi; echo '{\"additional_context\": \"PROMPT-CONTEXT\"}'"}],
		"Stop": [{"command": "echo '{\"additional_context\": \"STOP-CONTEXT\"}'"}]
	}}`)
	ws := acptest.Workspace(t, nil)
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Home: home, Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests},
		Model: acptest.Scenario(t, `{"turns": [{"calls": [{"text": "one"}]}, {"calls": [{"text": "two"}]}]}`)})
	a.Initialize()
	sid := a.NewSession(ws)
	if _, err := os.Stat(filepath.Join(ws, "starts.txt")); err == nil {
		t.Errorf("the SessionStart hook ran before the first prompt")
	}
	for _, c := range []struct{ prompt, stop string }{{"first", "end_turn"}, {"FORBIDDEN second", "refusal"}, {"third", "end_turn"}} {
		if stop := a.Prompt(sid, c.prompt); stop != c.stop {
			t.Fatalf("the prompt %q ended %q, want %q", c.prompt, stop, c.stop)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "starts.txt")); string(got) != "started\n" {
		t.Errorf("the SessionStart hook ran %d times, want once", strings.Count(string(got), "started"))
	}
	var contexts [][]any
	for _, e := range acptest.Log(t, a.DB, sid) {
		if e["kind"] != "user_message" {
			continue
		}
		p := e["payload"].(map[string]any)
		hc, _ := p["hook_context"].([]any)
		contexts = append(contexts, hc)
		if strings.Contains(fmt.Sprint(p["content"]), "FORBIDDEN") {
			t.Errorf("the refused prompt was recorded: %v", p)
		}
	}
	want := []string{"[SESSION-CONTEXT PROMPT-CONTEXT]", "[STOP-CONTEXT PROMPT-CONTEXT]"}
	if len(contexts) != 2 || fmt.Sprint(contexts[0]) != want[0] || fmt.Sprint(contexts[1]) != want[1] {
		t.Errorf("the prompts' hook contexts: %v, want %v", contexts, want)
	}
	reqs := modelRequests(t, requests)
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2 (the refused prompt sends none)", len(reqs))
	}
	if first := reqs[0].first(); !strings.Contains(first, "first") || !strings.Contains(first, "SESSION-CONTEXT") || !strings.Contains(first, "PROMPT-CONTEXT") {
		t.Errorf("the first request's prompt: %q", first)
	}
	if last := reqs[1].text(); !strings.Contains(last, "STOP-CONTEXT") || strings.Contains(last, "FORBIDDEN") {
		t.Errorf("the second request:\n%s", last)
	}
	said := false
	for _, u := range a.Updates(sid) {
		if strings.Contains(u.Text, "no forbidden prompts") {
			said = true
		}
	}
	if !said {
		t.Errorf("the user was not told why the prompt was refused")
	}
}

// TestHookSettingsReadOnceATurn: a turn reads the settings' hooks once,
// when it first meets a hook point, not at each tool call (each read
// checks every file the settings come from: ~10-20 stats a call, with
// hooks or without). So a hook the user adds to the settings while a turn
// runs applies from the next turn: the rest of the turn runs under the
// hooks it began with (none here), and the next turn's call meets it.
// Before, every hook point read the settings again, and the new hook
// refused the running turn's next call.
func TestHookSettingsReadOnceATurn(t *testing.T) {
	home := t.TempDir()
	writeSettings(t, home, `{}`)
	ws := acptest.Workspace(t, map[string]string{"a.txt": "content of a\n"})
	hold := `{"tool_calls": [{"name": "run_command", "input": {"command": "echo holding; while [ ! -e stop ]; do sleep 0.05; done"}}]}`
	read := `{"tool_calls": [{"name": "read_file", "input": {"path": "a.txt"}}]}`
	model := acptest.Scenario(t, `{"turns": [{"calls": [`+hold+`, `+read+`, {"text": "one"}]}, {"calls": [`+read+`, {"text": "two"}]}]}`)
	a := acptest.Start(t, acptest.Options{Home: home, Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)

	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "first"))
	a.WaitNote(func(m acptest.Msg) bool {
		return m.Method == "session/update" && strings.Contains(string(m.Params), "holding")
	})
	// The turn is in its first call: the user adds a hook that refuses
	// reads, then lets the call end.
	writeSettings(t, home, `{"hooks": {"PreToolUse": [{"matcher": "read_file", "command": "echo 'no reads now' >&2; exit 2"}]}}`)
	if err := os.WriteFile(filepath.Join(ws, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, rerr := a.Wait(answer); rerr != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("the first prompt answered %s %+v", res, rerr)
	}
	if stop := a.Prompt(sid, "second"); stop != "end_turn" {
		t.Fatalf("the second prompt ended %q", stop)
	}
	res := toolResults(t, a.DB, sid)
	if len(res) != 3 {
		t.Fatalf("%d tool results, want 3: %v", len(res), res)
	}
	out := func(i int) string { s, _ := res[i]["output"].(string); return s }
	if res[1]["status"] != "completed" || !strings.Contains(out(1), "content of a") {
		t.Errorf("the read in the turn the hook was added during: %v %q", res[1]["status"], out(1))
	}
	if res[2]["status"] != "denied" || !strings.Contains(out(2), "no reads now") {
		t.Errorf("the read of the next turn: %v %q", res[2]["status"], out(2))
	}
	if runs := hookRuns(t, a.DB, sid); len(runs) != 1 || runs[0]["verdict"] != "deny" {
		t.Errorf("hook_ran: %v, want the next turn's refusal only", runs)
	}
}
