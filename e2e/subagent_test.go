package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// taskCall is a scripted call of the task tool.
func taskCall(input string) string {
	return `{"tool_calls": [{"name": "task", "input": ` + input + `}]}`
}

// payloads returns the payloads of a log's events of one kind.
func payloads(log []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, e := range log {
		if e["kind"] == kind {
			out = append(out, e["payload"].(map[string]any))
		}
	}
	return out
}

// childOf returns the child session a parent's log started.
func childOf(t *testing.T, log []map[string]any) string {
	t.Helper()
	st := payloads(log, "subagent_started")
	if len(st) != 1 {
		t.Fatalf("%d subagent_started events in the parent's log, want 1: %s", len(st), acptest.Kinds(log))
	}
	return st[0]["child_id"].(string)
}

func TestSubagentAnswersThroughOneToolCall(t *testing.T) {
	scenario := `{"turns": [
		{"match": "investigate", "calls": [
			` + taskCall(`{"description": "find the greeting", "prompt": "SUBTASK-A: read notes.txt and report its greeting"}`) + `,
			{"text": "The subagent found it."}
		]},
		{"match": "SUBTASK-A", "calls": [
			{"text": "Reading the notes.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
			{"text": "The greeting is: hello"}
		]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "investigate the notes"); stop != "end_turn" {
		t.Fatalf("stop = %s", stop)
	}

	log := acptest.Log(t, a.DB, sid)
	child := childOf(t, log)
	res := toolResults(t, a.DB, sid)
	if len(res) != 1 || res[0]["name"] != "task" || res[0]["output"] != "The greeting is: hello" || res[0]["status"] != "completed" {
		t.Fatalf("the parent's results = %v", res)
	}
	fin := payloads(log, "subagent_finished")
	if len(fin) != 1 || fin[0]["status"] != "completed" || fin[0]["child_id"] != child {
		t.Errorf("subagent_finished = %v", fin)
	}

	// The editor saw one tool call, the task, whose content showed the
	// child's read as it went, then the answer. Nothing of the child's
	// session reached it directly.
	var ids []string
	progressShown := false
	for _, u := range a.Updates(sid) {
		switch u.Kind {
		case "tool_call":
			ids = append(ids, u.Fields["toolCallId"].(string))
			if u.Fields["kind"] != "think" || u.Fields["title"] != "Subagent: find the greeting" {
				t.Errorf("task call shown as %v", u.Fields)
			}
		case "tool_call_update":
			if b, _ := json.Marshal(u.Fields["content"]); strings.Contains(string(b), "✓ Read notes.txt") {
				progressShown = true
			}
		}
	}
	if len(ids) != 1 {
		t.Errorf("the editor saw %d tool calls, want the task alone: %v", len(ids), ids)
	}
	if !progressShown {
		t.Errorf("no tool_call_update showed the child's progress")
	}
	if n := len(a.Updates(child)); n != 0 {
		t.Errorf("%d updates named the child's session", n)
	}
	a.AssertValid(t)

	// `bridle sessions` shows the child under its parent; `bridle log`
	// prints the child's own log, with its own window's events.
	out, err := acptest.Run(t, "sessions", "--db", a.DB)
	if err != nil {
		t.Fatal(err, out)
	}
	if !strings.Contains(out, "└ "+child) || !strings.Contains(out, "find the greeting") {
		t.Errorf("bridle sessions does not show the child under its parent:\n%s", out)
	}
	clog := acptest.Log(t, a.DB, child)
	if k := acptest.Kinds(clog); !strings.Contains(k, "context_assembled assistant_message tool_started tool_result") || !strings.HasSuffix(k, "turn_finished") {
		t.Errorf("child log = %s", k)
	}
	if payloads(clog, "user_message")[0]["content"].([]any)[0].(map[string]any)["text"] != "SUBTASK-A: read notes.txt and report its greeting" {
		t.Errorf("the child's prompt is not the task's: %v", payloads(clog, "user_message"))
	}

	// A replay shows the same single call, ending with the answer.
	before := len(a.Updates(sid))
	a.MustCall("session/close", map[string]any{"sessionId": sid}, nil)
	a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	replay := acptest.Transcript(a.Updates(sid)[before:], "usage_update", "available_commands_update")
	joined := strings.Join(replay, "\n")
	if strings.Count(joined, `"sessionUpdate":"tool_call"`) != 1 || !strings.Contains(joined, `"title":"Subagent: find the greeting"`) ||
		!strings.Contains(joined, `{"content":[{"content":{"text":"The greeting is: hello","type":"text"},"type":"content"}],"sessionUpdate":"tool_call_update","status":"completed"`) {
		t.Errorf("replay:\n%s", joined)
	}

	// The child is not listed to the editor, and cannot be prompted.
	var list struct{ Sessions []map[string]any }
	a.MustCall("session/list", map[string]any{}, &list)
	if len(list.Sessions) != 1 {
		t.Errorf("session/list = %v, want the parent only", list.Sessions)
	}
	if _, rerr := a.Call("session/prompt", acptest.PromptParams(child, "hi")); rerr == nil || !strings.Contains(rerr.Message, "subagent") {
		t.Errorf("prompting the child: %v", rerr)
	}
	// Deleting the parent deletes the child.
	a.MustCall("session/delete", map[string]any{"sessionId": sid}, nil)
	if out, err := acptest.Run(t, "log", "--db", a.DB, child); err == nil {
		t.Errorf("the child's log survived its parent's deletion:\n%s", out)
	}
}

func TestSubagentApprovalsGoThroughTheParent(t *testing.T) {
	scenario := `{"turns": [
		{"match": "write", "calls": [
			` + taskCall(`{"description": "write two files", "prompt": "SUBTASK-W", "tools": ["read_file", "write_file"]}`) + `,
			{"text": "Done."}
		]},
		{"match": "SUBTASK-W", "calls": [
			{"tool_calls": [{"name": "write_file", "input": {"path": "out/a.txt", "content": "A\n"}}]},
			{"tool_calls": [{"name": "write_file", "input": {"path": "out/b.txt", "content": "B\n"}}]},
			{"tool_calls": [{"name": "run_command", "input": {"command": "echo hi"}}]},
			{"text": "Wrote both."}
		]}
	]}`
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	an := &answerer{answers: []string{"allow_always"}}
	a.OnRequest = an.handle
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "write them"); stop != "end_turn" {
		t.Fatalf("stop = %s", stop)
	}
	// One question, on the parent's session and its task call, naming the
	// subagent; the session-wide answer covered the second file.
	if an.count() != 1 {
		t.Fatalf("asked %d times, want 1", an.count())
	}
	q := an.asked[0]
	tc := q["toolCall"].(map[string]any)
	if q["sessionId"] != sid || !strings.HasPrefix(tc["toolCallId"].(string), "call-") ||
		!strings.Contains(tc["title"].(string), `Subagent "write two files"`) || !strings.Contains(fmt.Sprint(tc["content"]), "diff") {
		t.Errorf("question = %v", q)
	}
	var taskID string
	for _, u := range a.Updates(sid) {
		if u.Kind == "tool_call" {
			taskID = u.Fields["toolCallId"].(string)
		}
	}
	if tc["toolCallId"] != taskID {
		t.Errorf("the question is on call %v, the task is %s", tc["toolCallId"], taskID)
	}
	if readFile(t, ws, "out/a.txt") != "A\n" || readFile(t, ws, "out/b.txt") != "B\n" {
		t.Errorf("files not written")
	}
	log := acptest.Log(t, a.DB, sid)
	child := childOf(t, log)
	// run_command was not among its tools.
	var cmd map[string]any
	for _, r := range toolResults(t, a.DB, child) {
		if r["name"] == "run_command" {
			cmd = r
		}
	}
	if cmd == nil || cmd["status"] != "unavailable" || strings.Contains(cmd["output"].(string), "run_command,") {
		t.Errorf("run_command in the child = %v", cmd)
	}
	// The session-wide grant stands in the parent's log too.
	grants := payloads(log, "approval_granted")
	if len(grants) != 1 || grants[0]["scope"] != "session" || grants[0]["pattern"] != "out/**" {
		t.Errorf("parent's grants = %v", grants)
	}
	a.AssertValid(t)
}

func TestSubagentToolsNeverWiderThanTheMode(t *testing.T) {
	scenario := `{"turns": [
		{"match": "try", "calls": [
			` + taskCall(`{"description": "edit", "prompt": "SUBTASK-E", "tools": ["write_file"]}`) + `,
			` + taskCall(`{"description": "look", "prompt": "SUBTASK-R"}`) + `,
			{"text": "ok"}
		]},
		{"match": "SUBTASK-R", "calls": [
			{"tool_calls": [{"name": "write_file", "input": {"path": "x.txt", "content": "x"}}]},
			{"text": "I could not write."}
		]}
	]}`
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "read-only"}, nil)
	a.Prompt(sid, "try it")
	res := toolResults(t, a.DB, sid)
	if len(res) != 2 {
		t.Fatalf("results = %v", res)
	}
	if res[0]["status"] != "failed" || !strings.Contains(res[0]["output"].(string), `"write_file" is not available in read-only mode`) {
		t.Errorf("a task wider than the mode = %v", res[0])
	}
	if res[1]["output"] != "I could not write." {
		t.Errorf("the read-only task = %v", res[1])
	}
	child := childOf(t, acptest.Log(t, a.DB, sid))
	w := toolResults(t, a.DB, child)[0]
	// Its default tools: the read-only ones, without task or remember.
	out := w["output"].(string)
	if w["status"] != "unavailable" || !strings.Contains(out, "read_file") || strings.Contains(out, "task") || strings.Contains(out, "remember") {
		t.Errorf("write_file in a read-only child = %v", w)
	}
	if _, err := os.Stat(filepath.Join(ws, "x.txt")); err == nil {
		t.Errorf("the child wrote in read-only mode")
	}
}

func TestSubagentBudgetsReturnWhatItHas(t *testing.T) {
	read := `{"text": "Still looking.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]}`
	scenario := `{"turns": [
		{"match": "go", "calls": [
			` + taskCall(`{"description": "turns", "prompt": "SUBTASK-T", "max_turns": 2}`) + `,
			` + taskCall(`{"description": "tokens", "prompt": "SUBTASK-K", "max_tokens": 1000}`) + `,
			{"text": "ok"}
		]},
		{"match": "SUBTASK-T", "calls": [` + read + `, ` + read + `, ` + read + `, {"text": "never"}]},
		{"match": "SUBTASK-K", "calls": [
			{"text": "Big read.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}], "usage": {"input_tokens": 4000, "output_tokens": 10}},
			{"text": "never"}
		]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "go"); stop != "end_turn" {
		t.Fatalf("stop = %s", stop)
	}
	res := toolResults(t, a.DB, sid)
	turns, tokens := res[0]["output"].(string), res[1]["output"].(string)
	if !strings.Contains(turns, "Still looking.") || !strings.Contains(turns, "it used its budget of 2 model calls") || strings.Contains(turns, "never") {
		t.Errorf("turn budget result = %q", turns)
	}
	if !strings.Contains(tokens, "Big read.") || !strings.Contains(tokens, "4010 tokens of its budget of 1000") {
		t.Errorf("token budget result = %q", tokens)
	}
	for _, f := range payloads(acptest.Log(t, a.DB, sid), "subagent_finished") {
		if f["status"] != "budget_exhausted" {
			t.Errorf("subagent_finished = %v", f)
		}
	}
}

func TestCancellingTheParentCancelsTheChild(t *testing.T) {
	scenario := `{"turns": [
		{"match": "start", "calls": [` + taskCall(`{"description": "slow", "prompt": "SUBTASK-S"}`) + `, {"text": "never"}]},
		{"match": "SUBTASK-S", "calls": [
			{"text": "First I read.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
			{"text": ["counting ", "one ", "two ", "three ", "four ", "five ", "six "], "delay_ms": 150}
		]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := a.NewSession(ws)
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "start"))
	a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), `✓ Read notes.txt`) })
	a.Notify("session/cancel", map[string]string{"sessionId": sid})
	res, rerr := a.Wait(answer)
	if rerr != nil || !strings.Contains(string(res), `"cancelled"`) {
		t.Fatalf("prompt answer = %s %v", res, rerr)
	}
	r := toolResults(t, a.DB, sid)[0]
	if r["status"] != "cancelled" || !strings.Contains(r["output"].(string), "First I read.") || !strings.Contains(r["output"].(string), "cancelled before it finished") {
		t.Errorf("task result = %v", r)
	}
	clog := acptest.Log(t, a.DB, childOf(t, acptest.Log(t, a.DB, sid)))
	tf := payloads(clog, "turn_finished")
	if len(tf) != 1 || tf[0]["stop_reason"] != "cancelled" {
		t.Errorf("the child's turn ended %v: %s", tf, acptest.Kinds(clog))
	}
	a.AssertValid(t)
}

// A crash inside the child's tool call: after a restart the child's log is
// recovered like any session's (its read re-run, its turn closed), and the
// parent's task call gets what the child had, marked, without the child
// being run again.
func TestCrashDuringASubagent(t *testing.T) {
	scenario := `{"turns": [
		{"match": "delegate", "calls": [` + taskCall(`{"description": "read", "prompt": "SUBTASK-C"}`) + `, {"text": "Parent done."}]},
		{"match": "SUBTASK-C", "calls": [
			{"text": "Reading first.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
			{"text": "The notes say hello."}
		]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello\n"})
	model := acptest.Scenario(t, scenario)
	a := acptest.Start(t, acptest.Options{Model: model, Env: []string{"BRIDLE_FAULT=tool:1"}})
	a.Initialize()
	sid := a.NewSession(ws)
	a.Request("session/prompt", acptest.PromptParams(sid, "delegate"))
	a.WaitExit()

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	recovered(t, b, sid)
	log := acptest.Log(t, b.DB, sid)
	child := childOf(t, log)
	r := toolResults(t, b.DB, sid)
	if len(r) != 1 || r[0]["status"] != "unknown" || !strings.Contains(r[0]["output"].(string), "Reading first.") ||
		!strings.Contains(r[0]["output"].(string), "cut short when bridle restarted") || !strings.Contains(r[0]["output"].(string), "read_file: completed") {
		t.Fatalf("recovered task result = %v", r)
	}
	if f := payloads(log, "subagent_finished"); len(f) != 1 || f[0]["status"] != "interrupted" {
		t.Errorf("subagent_finished = %v", f)
	}
	clog := acptest.Log(t, b.DB, child)
	cr := toolResults(t, b.DB, child)
	if len(cr) != 1 || !strings.HasPrefix(cr[0]["output"].(string), "(run again after a restart)") {
		t.Errorf("the child's read after the restart = %v", cr)
	}
	if k := acptest.Kinds(clog); !strings.HasSuffix(k, "interrupted turn_finished") || strings.Count(k, "assistant_message") != 1 {
		t.Errorf("child log after recovery = %s (its model must not be called again)", k)
	}
	// The parent goes on; the child is listed after the restart.
	if stop := b.Prompt(sid, "delegate again later"); stop != "end_turn" {
		t.Errorf("stop = %s", stop)
	}
	if out, _ := acptest.Run(t, "sessions", "--db", b.DB); !strings.Contains(out, child) {
		t.Errorf("bridle sessions after a restart:\n%s", out)
	}
}

// A crash right after the child finished, before the parent recorded it:
// the child's answer is found in its log and becomes the call's result.
func TestCrashAfterASubagentFinished(t *testing.T) {
	scenario := `{"turns": [
		{"match": "delegate", "calls": [` + taskCall(`{"description": "answer", "prompt": "SUBTASK-F"}`) + `, {"text": "Parent done."}]},
		{"match": "SUBTASK-F", "calls": [{"text": "The answer is 42."}]}
	]}`
	ws := acptest.Workspace(t, nil)
	model := acptest.Scenario(t, scenario)
	// A clean run says where the child's last event falls in the commits.
	clean := acptest.Start(t, acptest.Options{Model: model})
	clean.Initialize()
	csid := clean.NewSession(ws)
	clean.Prompt(csid, "delegate")
	plog := acptest.Log(t, clean.DB, csid)
	n := 0
	for i, e := range plog {
		if e["kind"] == "subagent_started" {
			n = i + 1
		}
	}
	n += len(acptest.Log(t, clean.DB, childOf(t, plog)))

	a := acptest.Start(t, acptest.Options{Model: model, Env: []string{fmt.Sprintf("BRIDLE_FAULT=event:%d", n)}})
	a.Initialize()
	sid := a.NewSession(ws)
	a.Request("session/prompt", acptest.PromptParams(sid, "delegate"))
	a.WaitExit()
	if k := acptest.Kinds(acptest.Log(t, a.DB, sid)); strings.Contains(k, "subagent_finished") {
		t.Fatalf("the fault did not fall between the child's end and the parent's record: %s", k)
	}
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	b.MustCall("session/resume", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	recovered(t, b, sid)
	r := toolResults(t, b.DB, sid)
	if len(r) != 1 || r[0]["status"] != "completed" || r[0]["output"] != "The answer is 42." {
		t.Errorf("recovered result = %v", r)
	}
}

// TestSubagentTaskIsRedactedAsTheModelsWords: the task's description and
// prompt are written by the model, so they are redacted by the rules of
// everything it writes, not the gentler ones of a user's prompt: neither
// the child's log, its stored title, nor the task card shows a secret.
func TestSubagentTaskIsRedactedAsTheModelsWords(t *testing.T) {
	token := "ghp_" + strings.Repeat("Sb9", 12)
	scenario := `{"turns": [
		{"match": "delegate", "calls": [
			` + taskCall(`{"description": "check `+token+`", "prompt": "SUBTASK-R: log in with password=Hunter2Secret99 and report"}`) + `,
			{"text": "Delegated."}
		]},
		{"match": "SUBTASK-R", "calls": [{"text": "Done."}]}
	]}`
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "delegate the check"); stop != "end_turn" {
		t.Fatalf("stop = %s", stop)
	}
	child := childOf(t, acptest.Log(t, a.DB, sid))
	secrets := []string{token, "Hunter2Secret99"}
	var shown strings.Builder
	for _, s := range a.Sent() {
		shown.Write(s.Raw)
	}
	childLog, _ := json.Marshal(acptest.Log(t, a.DB, child))
	sessions, lerr := a.Call("session/list", map[string]any{})
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, secret := range secrets {
		for where, text := range map[string]string{"the child's log": string(childLog), "what the editor was sent": shown.String(), "session/list": string(sessions)} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %q", where, secret)
			}
		}
	}
	if !strings.Contains(string(childLog), "password=[REDACTED") {
		t.Errorf("the child's prompt is not redacted as the model's words: %s", childLog)
	}
}
