//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestEditWhileACommandRunsInTheBackground: the editor offers its buffers
// (ACP fs) and a command runs in the background (a dev server) in the
// workspace. It could swap a file for a link while the editor opens it,
// so the editor is not asked about the workspace's files while it runs;
// but it may run for hours, so an edit does not wait for it: edit_file
// and write_file are planned and written on disk at once, through the
// confined root, and their results say so. The command made b.txt a
// link to a file outside the workspace: editing it is refused, and the
// file outside is unchanged. d.txt has unsaved changes in the editor:
// the edit goes to the disk, and the editor's buffer is left as it is
// (the editor tells the user the file changed on disk). The editor is
// asked nothing while the command runs. Once it has ended, an edit goes
// through the editor again. Before, each edit waited 30 s for the
// command to end, then failed.
func TestEditWhileACommandRunsInTheBackground(t *testing.T) {
	parent := acptest.Workspace(t, map[string]string{
		"proj/a.txt":  "one\n",
		"proj/d.txt":  "clean\n",
		"outside.txt": "OUTSIDE\n",
	})
	proj := filepath.Join(parent, "proj")
	server := `ln -s ../outside.txt b.txt; echo linked; while [ ! -e stop ]; do sleep 0.05; done`
	edit := func(path, from, to string) string {
		return rawToolCall("edit_file", fmt.Sprintf(`{"path": %q, "old_string": %q, "new_string": %q}`, path, from, to))
	}
	scenario := `{"turns": [{"calls": [` + strings.Join([]string{
		rawToolCall("run_command", fmt.Sprintf(`{"command": %q, "background": true}`, server)),
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
		edit("a.txt", "one", "two"),
		edit("b.txt", "OUTSIDE", "CHANGED"),
		edit("d.txt", "clean", "edited"),
		rawToolCall("write_file", `{"path": "c.txt", "content": "new\n"}`),
		`{"text": "done"}`,
	}, ",") + `]}, {"calls": [` + edit("a.txt", "two", "three") + `, {"text": "again"}]}]}`

	ed := newEditor(map[string]string{filepath.Join(proj, "d.txt"): "dirty, unsaved\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.OnRequest = ed.handle(t)
	a.InitializeWith(true, true)
	sid := a.NewSession(proj)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)

	// A hang guard, not a timing assertion: before, each edit waited 30 s.
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "serve"))
	m, err := a.Conn.Wait(answer, 5*time.Minute)
	if err != nil || m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
		t.Fatalf("the turn answered %s %+v (%v); stderr:\n%s", m.Result, m.Error, err, a.Stderr())
	}
	read := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(parent, name))
		return string(data)
	}
	res := toolResults(t, a.DB, sid)
	if len(res) != 6 {
		t.Fatalf("%d results, want 6: %v", len(res), res)
	}
	out := func(i int) string { s, _ := res[i]["output"].(string); return s }
	const onDisk = "on disk, not through the editor: a command running in the background can write there"
	if !strings.Contains(out(1), "linked") {
		t.Fatalf("the command's output: %q", out(1))
	}
	if res[2]["status"] != "completed" || !strings.Contains(out(2), "Edited a.txt ("+onDisk) {
		t.Errorf("the edit of a.txt: %v", res[2])
	}
	if got := read("proj/a.txt"); got != "two\n" {
		t.Errorf("a.txt holds %q, want %q", got, "two\n")
	}
	if res[3]["status"] == "completed" || !strings.Contains(out(3), "outside") {
		t.Errorf("the edit of b.txt, a link out of the workspace: %v", res[3])
	}
	if got := read("outside.txt"); got != "OUTSIDE\n" {
		t.Errorf("the file outside the workspace holds %q", got)
	}
	if res[4]["status"] != "completed" || !strings.Contains(out(4), onDisk) || read("proj/d.txt") != "edited\n" {
		t.Errorf("the edit of d.txt: %v; on disk %q", res[4], read("proj/d.txt"))
	}
	if got := ed.buffer(filepath.Join(proj, "d.txt")); got != "dirty, unsaved\n" {
		t.Errorf("the editor's unsaved buffer of d.txt holds %q", got)
	}
	if res[5]["status"] != "completed" || !strings.Contains(out(5), "Created c.txt ("+onDisk) || read("proj/c.txt") != "new\n" {
		t.Errorf("write_file of a new file: %v; on disk %q", res[5], read("proj/c.txt"))
	}
	ed.mu.Lock()
	asked := slices.Concat(ed.reads, ed.writes)
	ed.mu.Unlock()
	if len(asked) > 0 {
		t.Errorf("the editor was asked about %v while the command ran", asked)
	}

	// The command ends: edits go through the editor again.
	if err := os.WriteFile(filepath.Join(proj, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(eventsOf(acptest.Log(t, a.DB, sid), "command_finished")) == 1 })
	if stop := a.Prompt(sid, "again"); stop != "end_turn" {
		t.Fatalf("stop reason %q; stderr:\n%s", stop, a.Stderr())
	}
	res = toolResults(t, a.DB, sid)
	if last := res[len(res)-1]; !strings.Contains(last["output"].(string), "Edited a.txt (through the editor)") {
		t.Errorf("the edit once the command ended: %v", last)
	}
	if got := ed.buffer(filepath.Join(proj, "a.txt")); got != "three\n" {
		t.Errorf("the editor's buffer of a.txt holds %q after the edit through it", got)
	}
	a.AssertValid(t)
}

// TestStaleEditSaysTheDiskWasRead: an edit is planned on the editor's
// buffer of a.txt, which holds unsaved text, and put to the user; while
// they answer, another session starts a command in the background. The
// check before the write then reads the disk (the editor is not asked
// while a command that can write there runs), which lacks that text: the
// edit is refused, nothing is written, and the refusal says the disk was
// read, not the editor's buffer. Before, it said the buffer changed,
// which it had not.
func TestStaleEditSaysTheDiskWasRead(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"a.txt": "one\n"})
	a := filepath.Join(ws, "a.txt")
	const unsaved = "one\nUNSAVED\n"
	server := `while [ ! -e stop ]; do sleep 0.05; done`
	scenario := `{"turns": [` +
		`{"match": "SERVE", "calls": [` + rawToolCall("run_command", fmt.Sprintf(`{"command": %q, "background": true}`, server)) + `, {"text": "serving"}]},` +
		`{"match": "EDIT", "calls": [` + rawToolCall("edit_file", `{"path": "a.txt", "old_string": "one", "new_string": "two"}`) + `, {"text": "edited"}]}]}`
	ed := newEditor(map[string]string{a: unsaved})
	ag := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	handle := ed.handle(t)
	ag.InitializeWith(true, true)
	editing := ag.NewSession(ws)
	serving := ag.NewSession(ws)
	ag.MustCall("session/set_mode", map[string]any{"sessionId": editing, "modeId": "ask"}, nil)
	ag.MustCall("session/set_mode", map[string]any{"sessionId": serving, "modeId": "full-auto"}, nil)
	defer os.WriteFile(filepath.Join(ws, "stop"), nil, 0o644)
	var asked atomic.Int32
	ag.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		if strings.HasPrefix(m.Method, "fs/") {
			return handle(m)
		}
		asked.Add(1)
		// While the user looks at the diff, the other session starts
		// its command, and has started it when they answer.
		if stop := ag.Prompt(serving, "SERVE"); stop != "end_turn" {
			t.Errorf("the other session's prompt: %s", stop)
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}, nil
	}
	if stop := ag.Prompt(editing, "EDIT"); stop != "end_turn" {
		t.Fatalf("%s\n%s", stop, ag.Stderr())
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("%d permission requests, want 1", n)
	}
	res := toolResults(t, ag.DB, editing)
	out, _ := res[0]["output"].(string)
	if !strings.Contains(out, "the file on disk does not hold the text this edit was planned on: a command runs in the background") || strings.Contains(out, "the editor's buffer changed") {
		t.Errorf("the stale edit's refusal: %q", out)
	}
	if got := ed.buffer(a); got != unsaved {
		t.Errorf("a.txt's buffer holds %q, want the unsaved text", got)
	}
	if b, _ := os.ReadFile(a); string(b) != "one\n" {
		t.Errorf("a.txt holds %q on disk, want it as it was", b)
	}
	ag.AssertValid(t)
}
