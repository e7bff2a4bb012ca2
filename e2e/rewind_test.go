package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

const rewindScenario = `{"turns": [
	{"match": "PROMPT-ONE", "calls": [
		{"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "v1\n"}}]},
		{"text": "one done"}]},
	{"match": "PROMPT-TWO", "calls": [
		{"tool_calls": [{"name": "edit_file", "input": {"path": "a.txt", "old_string": "v1", "new_string": "v2"}}]},
		{"tool_calls": [{"name": "write_file", "input": {"path": "b.txt", "content": "new\n"}}]},
		{"text": "two done"}]},
	{"match": "PROMPT-THREE", "calls": [{"text": "three done"}]}
]}`

// rewindSession starts bridle on rewindScenario in a fresh workspace (the
// client offering its buffers or not), opens a session in auto-edit mode
// and plays the first two prompts, which change files.
func rewindSession(t *testing.T, o acptest.Options, ed *editor) (a *acptest.Agent, sid, ws string) {
	t.Helper()
	ws = acptest.Workspace(t, map[string]string{"keep.txt": "untouched\n"})
	o.Model = acptest.Scenario(t, rewindScenario)
	a = acptest.Start(t, o)
	if ed != nil {
		a.OnRequest = ed.handle(t)
	}
	a.InitializeWith(ed != nil, ed != nil)
	sid = a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
	for _, p := range []string{"PROMPT-ONE", "PROMPT-TWO"} {
		if stop := a.Prompt(sid, p); stop != "end_turn" {
			t.Fatalf("%s: %s", p, stop)
		}
	}
	return a, sid, ws
}

// TestRewindThroughTheBinary: /rewind 2 in an editor puts the files back
// as prompt 1 left them and is shown again on load; `bridle rewind` then
// goes back before prompt 1, removing the file the agent created.
func TestRewindThroughTheBinary(t *testing.T) {
	a, sid, ws := rewindSession(t, acptest.Options{}, nil)
	// What an editor shows before a rewind: the prompts with the files
	// each changed, and what going back before one would put back.
	var prompts struct {
		Prompts []struct {
			N     int      `json:"n"`
			Text  string   `json:"text"`
			Files []string `json:"files"`
		} `json:"prompts"`
	}
	a.MustCall("_bridle/prompts", map[string]any{"sessionId": sid}, &prompts)
	if len(prompts.Prompts) != 2 || prompts.Prompts[1].Text != "PROMPT-TWO" || len(prompts.Prompts[1].Files) != 2 {
		t.Fatalf("_bridle/prompts = %+v", prompts)
	}
	var preview struct {
		Restore []struct{ Path, From, To string } `json:"restore"`
		Yours   []string                          `json:"yours"`
	}
	a.MustCall("_bridle/rewind_preview", map[string]any{"sessionId": sid, "prompt": 2}, &preview)
	if len(preview.Restore) != 2 || len(preview.Yours) != 0 {
		t.Fatalf("_bridle/rewind_preview = %+v", preview)
	}
	if stop := a.Prompt(sid, "/rewind"); stop != "end_turn" {
		t.Fatalf("/rewind alone: %s", stop)
	}
	if stop := a.Prompt(sid, "/rewind 2"); stop != "end_turn" {
		t.Fatalf("/rewind 2: %s", stop)
	}
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			return "<none>"
		}
		return string(b)
	}
	if file("a.txt") != "v1\n" || file("b.txt") != "<none>" || file("keep.txt") != "untouched\n" {
		t.Fatalf("after /rewind 2: a %q, b %q, keep %q", file("a.txt"), file("b.txt"), file("keep.txt"))
	}
	if stop := a.Prompt(sid, "PROMPT-THREE"); stop != "end_turn" {
		t.Fatalf("after the rewind: %s", stop)
	}
	if _, err := a.Call("session/prompt", acptest.PromptParams(sid, "/rewind 9")); err == nil || err.Code != -32602 || !strings.Contains(err.Message, "this session has 3 prompts") {
		t.Fatalf("/rewind past the last prompt: %v", err)
	}
	listed := false
	for _, u := range a.Updates(sid) {
		listed = listed || strings.Contains(u.Text, "2. PROMPT-TWO — changed")
	}
	if !listed {
		t.Error("/rewind alone does not list the prompts with the files they changed")
	}
	before := len(a.Updates(sid))
	a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	shown := false
	for _, u := range a.Updates(sid)[before:] {
		shown = shown || strings.Contains(u.Text, "Rewound to before prompt 2")
	}
	if !shown {
		t.Error("session/load does not show the rewind")
	}
	a.CloseStdin()
	a.AssertValid(t)

	out, err := acptest.Run(t, "rewind", "--db", a.DB, sid)
	if err != nil || !strings.Contains(out, "2. PROMPT-TWO (rewound) — changed") {
		t.Fatalf("bridle rewind SESSION does not list the prompts (%v):\n%s", err, out)
	}
	out, err = acptest.Run(t, "rewind", "--db", a.DB, sid, "1")
	if err != nil {
		t.Fatalf("bridle rewind: %v\n%s", err, out)
	}
	if file("a.txt") != "<none>" || file("keep.txt") != "untouched\n" || !strings.Contains(out, "a.txt: removed (the agent had created it)\n") {
		t.Fatalf("after bridle rewind 1: a %q, keep %q; printed:\n%s", file("a.txt"), file("keep.txt"), out)
	}
	if log, _ := acptest.Run(t, "log", "--db", a.DB, sid); !strings.Contains(log, "rewound") || !strings.Contains(log, "rewind_started") {
		t.Errorf("bridle log does not show the rewinds:\n%s", log)
	}
	// A rewind can be taken back: a.txt returns as the last rewind found it.
	out, err = acptest.Run(t, "rewind", "--db", a.DB, sid, "undo")
	if err != nil || file("a.txt") != "v1\n" || !strings.Contains(out, "Undid the rewind to before prompt 1") {
		t.Fatalf("bridle rewind undo (%v): a %q; printed:\n%s", err, file("a.txt"), out)
	}
}

// TestRewindKilledMidwayIsFinished: bridle is killed right after it
// recorded a rewind's plan, before any file was put back; the next bridle
// to open the session finishes the rewind.
func TestRewindKilledMidwayIsFinished(t *testing.T) {
	a, sid, ws := rewindSession(t, acptest.Options{}, nil)
	model := acptest.Scenario(t, rewindScenario)
	a.CloseStdin()

	// The rewind's plan is the first event this process commits.
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model, Env: []string{"BRIDLE_FAULT=event:1"}})
	b.Initialize()
	b.MustCall("session/resume", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	b.Request("session/prompt", acptest.PromptParams(sid, "/rewind 2"))
	b.WaitExit()
	if got, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(got) != "v2\n" {
		t.Fatalf("a.txt = %q when bridle died: the kill came after the files were touched", got)
	}

	c := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	c.Initialize()
	c.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	if got, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(got) != "v1\n" {
		t.Fatalf("a.txt = %q after the restart: the rewind was not finished", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt is still there after the restart (%v)", err)
	}
	kinds := acptest.Kinds(acptest.Log(t, c.DB, sid))
	if !strings.Contains(kinds, "rewind_started rewound turn_finished") {
		t.Fatalf("the log does not close the rewind: %s", kinds)
	}
	c.CloseStdin()
}

// TestForkThroughTheBinary: /fork 2 makes a session whose history is the
// first prompt's; both sessions are prompted and go their own ways, the
// fork's load replays the shared history, and `bridle sessions` shows the
// fork under the session it came from.
func TestForkThroughTheBinary(t *testing.T) {
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a, sid, ws := rewindSession(t, acptest.Options{Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}}, nil)
	var fork struct {
		SessionID string `json:"sessionId"`
		Title     string `json:"title"`
	}
	a.MustCall("_bridle/fork", map[string]any{"sessionId": sid, "prompt": 2}, &fork)
	if fork.SessionID == "" || !strings.Contains(fork.Title, "before prompt 2") {
		t.Fatalf("_bridle/fork = %+v", fork)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "b.txt")); string(b) != "new\n" {
		t.Fatalf("a fork touched the files: b.txt = %q", b)
	}
	a.MustCall("session/load", map[string]any{"sessionId": fork.SessionID, "cwd": ws, "mcpServers": []any{}}, nil)
	replayed := ""
	for _, u := range a.Updates(fork.SessionID) {
		replayed += u.Text + "\n"
	}
	if !strings.Contains(replayed, "PROMPT-ONE") || strings.Contains(replayed, "PROMPT-TWO") {
		t.Fatalf("the fork's load replays:\n%s", replayed)
	}
	if stop := a.Prompt(fork.SessionID, "PROMPT-THREE"); stop != "end_turn" {
		t.Fatalf("fork: %s", stop)
	}
	if stop := a.Prompt(sid, "PROMPT-THREE"); stop != "end_turn" {
		t.Fatalf("parent after the fork: %s", stop)
	}
	// The fork's request holds the first prompt and not the second; the
	// parent's holds both.
	reqs := modelRequests(t, requests)
	text := func(r modelRequest) string {
		var b strings.Builder
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				b.WriteString(p.Text + "\n")
			}
		}
		return b.String()
	}
	forkReq, parentReq := text(reqs[len(reqs)-2]), text(reqs[len(reqs)-1])
	if !strings.Contains(forkReq, "PROMPT-ONE") || strings.Contains(forkReq, "PROMPT-TWO") || !strings.Contains(forkReq, "PROMPT-THREE") {
		t.Errorf("the fork's request:\n%s", forkReq)
	}
	if !strings.Contains(parentReq, "PROMPT-TWO") || !strings.Contains(parentReq, "PROMPT-THREE") {
		t.Errorf("the parent's request:\n%s", parentReq)
	}
	if _, err := a.Call("_bridle/fork", map[string]any{"sessionId": sid, "prompt": 7}); err == nil || err.Code != -32602 {
		t.Fatalf("a fork past the last prompt: %v", err)
	}
	// The fork reads the parent's history: the parent cannot go first.
	if _, err := a.Call("session/delete", map[string]any{"sessionId": sid}); err == nil || err.Code != -32602 || !strings.Contains(err.Message, "delete the fork first") {
		t.Fatalf("deleting a session that has a fork: %v", err)
	}
	a.CloseStdin()
	a.AssertValid(t)
	out, err := acptest.Run(t, "sessions", "--db", a.DB)
	if err != nil || !strings.Contains(out, "⑂ "+fork.SessionID) {
		t.Fatalf("bridle sessions does not show the fork under its parent (%v):\n%s", err, out)
	}
}

// TestRewindPreviewAsksTheEditor: with a client that holds the files, the
// preview hashes them through the editor, which can answer because the
// preview is answered off the connection's read loop.
func TestRewindPreviewAsksTheEditor(t *testing.T) {
	ed := newEditor(map[string]string{})
	a, sid, _ := rewindSession(t, acptest.Options{}, ed)
	var preview struct {
		Restore []struct{ Path, From, To string } `json:"restore"`
		Kept    []string                          `json:"kept"`
	}
	a.MustCall("_bridle/rewind_preview", map[string]any{"sessionId": sid, "prompt": 2}, &preview)
	if len(preview.Restore) != 2 || len(preview.Kept) != 0 {
		t.Fatalf("_bridle/rewind_preview through the editor = %+v", preview)
	}
	ed.mu.Lock()
	reads := len(ed.reads)
	ed.mu.Unlock()
	if reads == 0 {
		t.Fatal("the preview did not ask the editor for the files")
	}
	a.CloseStdin()
}

// rewindKilledThroughEditor plays rewindSession with the editor ed
// holding the files, then a bridle that records /rewind 2's plan and is
// killed before it puts any file back. It returns the database, the
// model and the session.
func rewindKilledThroughEditor(t *testing.T, ed *editor) (db, model, sid, ws string) {
	t.Helper()
	a, sid, ws := rewindSession(t, acptest.Options{}, ed)
	a.CloseStdin()
	model = acptest.Scenario(t, rewindScenario)
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model, Env: []string{"BRIDLE_FAULT=event:1"}})
	b.OnRequest = ed.handle(t)
	b.InitializeWith(true, true)
	b.MustCall("session/resume", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	b.Request("session/prompt", acptest.PromptParams(sid, "/rewind 2"))
	b.WaitExit()
	return a.DB, model, sid, ws
}

// finishKilledRewind restarts bridle on db with the editor offering its
// buffers and opens the session, whose rewind a kill cut short
// (rewindKilledThroughEditor), until the rewind is finished.
func finishKilledRewind(t *testing.T, ed *editor, db, model, sid, ws string) *acptest.Agent {
	t.Helper()
	c := acptest.Start(t, acptest.Options{DB: db, Model: model})
	c.OnRequest = ed.handle(t)
	c.InitializeWith(true, true)
	c.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	c.WaitNote(func(m acptest.Msg) bool {
		return m.Method == "session/update" && strings.Contains(string(m.Params), "Rewound to before prompt 2")
	})
	return c
}

// TestRewindKilledMidwayThroughTheEditor: the same with a client that
// holds the files: the restart finishes the rewind through the editor's
// buffers once session/load is answered (asking it while the load waits
// would stall on every file), and the editor sees why.
func TestRewindKilledMidwayThroughTheEditor(t *testing.T) {
	ed := newEditor(map[string]string{})
	db, model, sid, ws := rewindKilledThroughEditor(t, ed)

	c := finishKilledRewind(t, ed, db, model, sid, ws)
	if got := ed.buffer(filepath.Join(ws, "a.txt")); got != "v1\n" {
		t.Fatalf("a.txt in the editor = %q after the restart: the rewind was not finished through it", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt is still there after the restart (%v)", err)
	}
	if k := acptest.Kinds(acptest.Log(t, c.DB, sid)); !strings.Contains(k, "rewind_started rewound turn_finished") {
		t.Fatalf("the log does not close the rewind: %s", k)
	}
	c.CloseStdin()
}

const commandRewindScenario = `{"turns": [
	{"match": "PROMPT-ONE", "calls": [
		{"tool_calls": [{"name": "run_command", "input": {"command": "rm gone.txt tool.sh && printf 'changed\\n' > old.txt && mkdir -p gen/deep && printf 'made\\n' > gen/deep/new.txt && printf 'x' > logs/run.txt && printf 'bin' > data.bin"}}]},
		{"text": "one done"}]},
	{"match": "PROMPT-TWO", "calls": [
		{"tool_calls": [{"name": "run_command", "input": {"command": "printf 'again\\n' > old.txt && printf 'later\\n' > mine.txt"}}]},
		{"text": "two done"}]}
]}`

// TestRewindAfterACommand: files a command deleted, changed and created
// (binary too) come back as they were, found by the scans around the
// command; a file the user changed after the command is asked about and,
// refused, left alone; an ignored file is the user's, never touched.
func TestRewindAfterACommand(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{
		"gone.txt":   "precious\n",
		"old.txt":    "old\n",
		"data.bin":   "\x00\x01\x02\xff",
		".gitignore": "*.log\n",
		"build.log":  "ignored\n",
		"tool.sh":    "#!/bin/sh\necho tool\n",
	})
	if err := os.Chmod(filepath.Join(ws, "tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An empty directory that was there before: the rewind leaves it.
	if err := os.Mkdir(filepath.Join(ws, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, commandRewindScenario)})
	var mu sync.Mutex
	asked := []string{}
	a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		mu.Lock()
		asked = append(asked, string(m.Params))
		mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject_once"}}, nil
	}
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	for _, p := range []string{"PROMPT-ONE", "PROMPT-TWO"} {
		if stop := a.Prompt(sid, p); stop != "end_turn" {
			t.Fatalf("%s: %s", p, stop)
		}
	}
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			return "<none>"
		}
		return string(b)
	}
	if file("gone.txt") != "<none>" || file("gen/deep/new.txt") != "made\n" || file("old.txt") != "again\n" {
		t.Fatalf("the commands did not run: gone %q, new %q, old %q", file("gone.txt"), file("gen/deep/new.txt"), file("old.txt"))
	}
	var prompts struct {
		Prompts []struct {
			Files []string `json:"files"`
		} `json:"prompts"`
	}
	a.MustCall("_bridle/prompts", map[string]any{"sessionId": sid}, &prompts)
	if len(prompts.Prompts) != 2 || len(prompts.Prompts[0].Files) != 6 || len(prompts.Prompts[1].Files) != 2 {
		t.Fatalf("_bridle/prompts does not list what the commands changed: %+v", prompts)
	}
	// The user writes over what the second command wrote.
	if err := os.WriteFile(filepath.Join(ws, "mine.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "build.log"), []byte("rebuilt\n"), 0o644)
	if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
		t.Fatalf("/rewind 1: %s", stop)
	}
	want := map[string]string{"gone.txt": "precious\n", "old.txt": "old\n", "gen/deep/new.txt": "<none>", "logs/run.txt": "<none>", "data.bin": "\x00\x01\x02\xff",
		"mine.txt": "the user's\n", "build.log": "rebuilt\n"}
	for name, content := range want {
		if got := file(name); got != content {
			t.Errorf("after /rewind 1: %s = %q, want %q", name, got, content)
		}
	}
	// The directories the command made went with its file; the one that
	// was there stays.
	if _, err := os.Stat(filepath.Join(ws, "gen")); !os.IsNotExist(err) {
		t.Errorf("gen/, which the command made, is still there (%v)", err)
	}
	if fi, err := os.Stat(filepath.Join(ws, "logs")); err != nil || !fi.IsDir() {
		t.Errorf("logs/, which was there before, is gone (%v)", err)
	}
	if fi, err := os.Stat(filepath.Join(ws, "tool.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("tool.sh is not back as it was, executable: %v %v", fi, err)
	}
	mu.Lock()
	questions := slices.Clone(asked)
	mu.Unlock()
	if len(questions) != 1 || !strings.Contains(questions[0], "mine.txt") || strings.Contains(questions[0], "old.txt") {
		t.Errorf("the rewind asked %d times, want once about mine.txt only: %q", len(questions), questions)
	}
	// Undone, the commands' work is back, and the user's file still theirs.
	if stop := a.Prompt(sid, "/rewind undo"); stop != "end_turn" {
		t.Fatalf("/rewind undo: %s", stop)
	}
	if file("gone.txt") != "<none>" || file("gen/deep/new.txt") != "made\n" || file("old.txt") != "again\n" || file("data.bin") != "bin" || file("mine.txt") != "the user's\n" {
		t.Errorf("after /rewind undo: gone %q, new %q, old %q, data %q, mine %q", file("gone.txt"), file("gen/deep/new.txt"), file("old.txt"), file("data.bin"), file("mine.txt"))
	}
	a.CloseStdin()
	a.AssertValid(t)
}

// TestRewindPreviewCanBeCancelled: an editor that does not answer for its
// buffers would hold a preview for its time bound per file; the editor
// cancels the preview ($/cancel_request) and gets ACP's cancelled answer
// at once, while the read is still unanswered.
func TestRewindPreviewCanBeCancelled(t *testing.T) {
	ed := newEditor(map[string]string{})
	a, sid, _ := rewindSession(t, acptest.Options{}, ed)
	release := make(chan struct{})
	ed.mu.Lock()
	ed.hold, ed.held = release, make(chan string, 8)
	ed.mu.Unlock()
	defer close(release)
	id, answer := a.Request("_bridle/rewind_preview", map[string]any{"sessionId": sid, "prompt": 2})
	<-ed.held // bridle is waiting on the editor
	a.Notify("$/cancel_request", map[string]any{"requestId": json.RawMessage(id)})
	m, ok := <-answer
	if !ok || m.Error == nil || m.Error.Code != -32800 {
		t.Fatalf("the cancelled preview answered %+v (error %+v), want -32800", m, m.Error)
	}
	a.CloseStdin()
	a.AssertValid(t)
}

// TestPromptAfterARestartFinishesTheRewindFirst: the restarted bridle is
// finishing a rewind a kill cut short through the editor when the user
// sends a prompt; the prompt withdraws that work, and its own turn puts
// the files back before anything else, so no turn runs on files half put
// back.
func TestPromptAfterARestartFinishesTheRewindFirst(t *testing.T) {
	ed := newEditor(map[string]string{})
	db, model, sid, ws := rewindKilledThroughEditor(t, ed)

	release := make(chan struct{})
	ed.mu.Lock()
	ed.hold, ed.held, ed.holdMethod = release, make(chan string, 8), "fs/write_text_file"
	ed.mu.Unlock()
	c := acptest.Start(t, acptest.Options{DB: db, Model: model})
	c.OnRequest = ed.handle(t)
	c.InitializeWith(true, true)
	c.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	<-ed.held // finishing the rewind, through the editor, which is slow
	ed.mu.Lock()
	ed.hold = nil
	ed.mu.Unlock()
	_, answer := c.Request("session/prompt", acptest.PromptParams(sid, "PROMPT-THREE"))
	m := <-answer
	close(release)
	if m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
		t.Fatalf("the prompt after the restart answered %s %+v", m.Result, m.Error)
	}
	if got := ed.buffer(filepath.Join(ws, "a.txt")); got != "v1\n" {
		t.Fatalf("a.txt in the editor = %q: the rewind was not finished", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b.txt is still there (%v)", err)
	}
	if k := acptest.Kinds(acptest.Log(t, c.DB, sid)); !strings.Contains(k, "rewind_started rewound turn_finished user_message") {
		t.Fatalf("the rewind was not finished before the prompt: %s", k)
	}
	c.CloseStdin()
	c.AssertValid(t)
}

// TestRewindBinaryThroughTheEditor: with the editor's buffers offered, a
// binary file a command changed is hashed and put back on disk, byte for
// byte: an editor's buffer holds text, which would not.
func TestRewindBinaryThroughTheEditor(t *testing.T) {
	const scenario = `{"turns": [{"match": "PROMPT-ONE", "calls": [
		{"tool_calls": [{"name": "run_command", "input": {"command": "printf '\\377\\376\\000' > img.bin && printf 'text now' > data.bin"}}]},
		{"text": "done"}]}]}`
	ws := acptest.Workspace(t, map[string]string{"img.bin": "\x89PNG\x00\xff", "data.bin": "\x00\x01\x02\xff"})
	ed := newEditor(map[string]string{})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	handle := ed.handle(t)
	var mu sync.Mutex
	asked := 0
	a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		if strings.HasPrefix(m.Method, "fs/") {
			return handle(m)
		}
		mu.Lock()
		asked++
		mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject_once"}}, nil
	}
	a.InitializeWith(true, true)
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "PROMPT-ONE"); stop != "end_turn" {
		t.Fatalf("PROMPT-ONE: %s", stop)
	}
	if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
		t.Fatalf("/rewind 1: %s", stop)
	}
	for name, want := range map[string]string{"img.bin": "\x89PNG\x00\xff", "data.bin": "\x00\x01\x02\xff"} {
		if got, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(got) != want {
			t.Errorf("%s after the rewind = %q (%v), want %q", name, got, err, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if asked != 0 {
		t.Errorf("the rewind asked %d times: the binary file read through the editor did not hash as it is", asked)
	}
	a.CloseStdin()
}

// TestRewindASubagentsEditsInTheEditor: a subagent's edit that went into
// the editor's buffer, not to disk (so no scan sees it), is its parent's
// task call's change, and the parent's rewind puts the buffer back.
func TestRewindASubagentsEditsInTheEditor(t *testing.T) {
	const scenario = `{"turns": [
		{"match": "PROMPT-ONE", "calls": [
			{"tool_calls": [{"name": "task", "input": {"description": "fix", "prompt": "SUBTASK-E", "tools": ["edit_file"]}}]},
			{"text": "parent done"}]},
		{"match": "SUBTASK-E", "calls": [
			{"tool_calls": [{"name": "edit_file", "input": {"path": "a.txt", "old_string": "one", "new_string": "two"}}]},
			{"text": "edited"}]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"a.txt": "one\n"})
	path := filepath.Join(ws, "a.txt")
	ed := newEditor(map[string]string{})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.OnRequest = ed.handle(t)
	a.InitializeWith(true, true)
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
	if stop := a.Prompt(sid, "PROMPT-ONE"); stop != "end_turn" {
		t.Fatalf("PROMPT-ONE: %s", stop)
	}
	if got := ed.buffer(path); got != "two\n" {
		t.Fatalf("the subagent's edit is not in the editor's buffer: %q", got)
	}
	if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
		t.Fatalf("/rewind 1: %s", stop)
	}
	if got := ed.buffer(path); got != "one\n" {
		t.Errorf("after /rewind 1 the buffer holds %q, want the text before the subagent's edit", got)
	}
	a.CloseStdin()
	a.AssertValid(t)
}

// TestRewindFinishedLeavesUnsavedTextItDidNotKeep: a rewind through the
// editor's buffers is killed after its plan (which kept a.txt's content,
// v2, so the rewind can be undone) and before it put a.txt back. While
// bridle is down the user types into a.txt's buffer. The restart
// finishes the rewind, but does not write over that text, which was
// never kept: a.txt is left as it is, and the rewind's end says why.
// b.txt, as planned, is still put back. Before, the buffer was replaced
// by v1 and the user's unsaved text lost for good.
func TestRewindFinishedLeavesUnsavedTextItDidNotKeep(t *testing.T) {
	ed := newEditor(map[string]string{})
	db, model, sid, ws := rewindKilledThroughEditor(t, ed)
	a := filepath.Join(ws, "a.txt")
	const typed = "v2\nTYPED WHILE BRIDLE WAS DOWN\n"
	ed.mu.Lock()
	ed.buffers[a] = typed
	ed.mu.Unlock()

	c := finishKilledRewind(t, ed, db, model, sid, ws)
	if got := ed.buffer(a); got != typed {
		t.Errorf("a.txt in the editor = %q after the restart, want the user's unsaved text %q", got, typed)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt is still there after the restart (%v)", err)
	}
	ends := eventsOf(acptest.Log(t, c.DB, sid), "rewound")
	if len(ends) != 1 {
		t.Fatalf("%d rewind ends, want 1", len(ends))
	}
	kept, _ := json.Marshal(ends[0]["kept"])
	restored, _ := json.Marshal(ends[0]["restored"])
	if !strings.Contains(string(kept), "a.txt") || !strings.Contains(string(kept), "changed since the rewind read it") {
		t.Errorf("the rewind's end does not say a.txt was left, and why: kept %s", kept)
	}
	if strings.Contains(string(restored), "a.txt") {
		t.Errorf("the rewind's end counts a.txt as put back: %s", restored)
	}
	c.CloseStdin()
	c.AssertValid(t)
}
