package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// writesScenario is a turn of write_file calls, one per path and content,
// then "Done.".
func writesScenario(t *testing.T, files [][2]string) string {
	t.Helper()
	var calls []any
	for _, f := range files {
		calls = append(calls, map[string]any{"tool_calls": []any{map[string]any{"name": "write_file",
			"input": map[string]string{"path": f[0], "content": f[1]}}}})
	}
	calls = append(calls, map[string]any{"text": "Done."})
	// A window that holds the 8 MiB write TestNewFilesGoThroughTheEditor
	// makes.
	b, err := json.Marshal(map[string]any{"model": map[string]int{"window": 4 << 20},
		"turns": []any{map[string]any{"match": "CREATE", "calls": calls}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newFilesSession starts bridle with a client offering its buffers (ed),
// opens a session in auto-edit mode on a fresh workspace and plays the
// writes of files in one prompt.
func newFilesSession(t *testing.T, ed *editor, files [][2]string, env ...string) (a *acptest.Agent, model, sid, ws string) {
	t.Helper()
	ws = acptest.Workspace(t, map[string]string{"keep.txt": "untouched\n"})
	model = acptest.Scenario(t, writesScenario(t, files))
	a = acptest.Start(t, acptest.Options{Model: model, Env: env})
	a.OnRequest = ed.handle(t)
	a.InitializeWith(true, true)
	sid = a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
	return a, model, sid, ws
}

// TestNewFilesGoThroughTheEditor: with an editor that offers its buffers,
// write_file of a new text file reaches the editor as fs/write_text_file
// with its content (its missing directory made first, so the editor can
// make the file), where its review and undo see it; a new file of binary
// content, or over the 8 MiB the editor is given, is made on disk.
func TestNewFilesGoThroughTheEditor(t *testing.T) {
	big := strings.Repeat("x", 8<<20+1)
	ed := newEditor(map[string]string{})
	a, _, sid, ws := newFilesSession(t, ed, [][2]string{
		{"made/new.txt", "created\n"},
		{"bin.dat", "a\x00b"},
		{"big.txt", big},
	})
	if stop := a.Prompt(sid, "CREATE"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	a.CloseStdin()
	res := results(t, a.DB, sid)
	want := []string{"Created made/new.txt (through the editor)", "Created bin.dat (", "Created big.txt ("}
	if len(res) != len(want) {
		t.Fatalf("%d tool results, want %d: %v", len(res), len(want), res)
	}
	for i, w := range want {
		if out, _ := res[i]["output"].(string); !strings.HasPrefix(out, w) {
			t.Errorf("result %d = %.200q, want it to start %q", i+1, out, w)
		}
	}
	ed.mu.Lock()
	writes, written := slices.Clone(ed.writes), slices.Clone(ed.written)
	ed.mu.Unlock()
	if len(writes) != 1 || writes[0] != filepath.Join(ws, "made", "new.txt") || written[0] != "created\n" {
		t.Fatalf("the editor was asked to write %v (%d contents), want made/new.txt with its content, and nothing else", writes, len(written))
	}
	for rel, want := range map[string]string{"made/new.txt": "created\n", "bin.dat": "a\x00b", "big.txt": big} {
		if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(b) != want {
			t.Errorf("%s on disk: %d bytes (%v), want its %d bytes", rel, len(b), err, len(want))
		}
	}
	a.AssertValid(t)
}

// TestRewindRemovesAFileCreatedThroughTheEditor: a file the agent created
// through the editor is taken away by /rewind, with the directory made
// for it.
func TestRewindRemovesAFileCreatedThroughTheEditor(t *testing.T) {
	ed := newEditor(map[string]string{})
	a, _, sid, ws := newFilesSession(t, ed, [][2]string{{"made/new.txt", "created\n"}})
	if stop := a.Prompt(sid, "CREATE"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	path := filepath.Join(ws, "made", "new.txt")
	ed.mu.Lock()
	writes := slices.Clone(ed.writes)
	ed.mu.Unlock()
	if !slices.Equal(writes, []string{path}) {
		t.Fatalf("the editor was asked to write %v, want %s", writes, path)
	}
	if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
		t.Fatalf("/rewind 1: %s", stop)
	}
	a.CloseStdin()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("made/new.txt after /rewind 1: %v, want it gone", err)
	}
	if _, err := os.Lstat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("made/ after /rewind 1: %v, want it gone (bridle made it for the file)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "keep.txt")); string(b) != "untouched\n" {
		t.Errorf("keep.txt = %q", b)
	}
}

// TestCreatingThroughTheEditorSurvivesACrash: bridle dies after the
// editor took a new file and before the result was recorded; the
// restarted bridle finds the file (on disk, or only in the editor's
// buffer when the editor does not save it) and does not write it again.
func TestCreatingThroughTheEditorSurvivesACrash(t *testing.T) {
	for _, keepNew := range []bool{false, true} {
		name := map[bool]string{false: "the editor saves it", true: "the editor keeps it unsaved"}[keepNew]
		t.Run(name, func(t *testing.T) {
			ed := newEditor(map[string]string{})
			ed.keepNew = keepNew
			a, model, sid, ws := newFilesSession(t, ed, [][2]string{{"made/new.txt", "created\n"}}, "BRIDLE_FAULT=tool:1")
			path := filepath.Join(ws, "made", "new.txt")
			a.Request("session/prompt", acptest.PromptParams(sid, "CREATE"))
			a.WaitExit()
			if got := ed.buffer(path); got != "created\n" {
				t.Fatalf("before the restart the editor holds %q: the new file should have reached it", got)
			}

			// Settled as applied before the restart, or (wrongly) again.
			b := restartWithEditor(t, a.DB, model, sid, ws, ed, "restart")
			b.CloseStdin()
			res := results(t, b.DB, sid)
			if len(res) != 1 || !strings.Contains(res[0]["output"].(string), "the edit was applied before bridle restarted") {
				t.Fatalf("recovered results %v, want one saying the file had been made", res)
			}
			ed.mu.Lock()
			writes := len(ed.writes)
			ed.mu.Unlock()
			if writes != 1 {
				t.Fatalf("the editor was asked to write %d times: the new file was written again", writes)
			}
			_, err := os.Lstat(path)
			if onDisk := err == nil; onDisk == keepNew {
				t.Fatalf("made/new.txt on disk: %v (%v); bridle should not write it behind the editor", onDisk, err)
			}
		})
	}
}

// A new file is not written over a buffer the user has not saved: the
// editor holds text for a name that has no file on disk, which the model
// planned on as no file.
func TestANewFileIsNotWrittenOverAnUnsavedBuffer(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"keep.txt": "untouched\n"})
	path := filepath.Join(ws, "draft.txt")
	ed := newEditor(map[string]string{path: "the user's unsaved draft\n"})
	model := acptest.Scenario(t, writesScenario(t, [][2]string{{"draft.txt", "agent\n"}}))
	a := acptest.Start(t, acptest.Options{Model: model})
	a.OnRequest = ed.handle(t)
	a.InitializeWith(true, true)
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
	a.Prompt(sid, "CREATE")
	a.CloseStdin()
	if got := ed.buffer(path); got != "the user's unsaved draft\n" {
		t.Errorf("the unsaved buffer now holds %q", got)
	}
	ed.mu.Lock()
	writes := slices.Clone(ed.writes)
	ed.mu.Unlock()
	if len(writes) != 0 {
		t.Errorf("the editor was asked to write %v", writes)
	}
	var said bool
	for _, r := range results(t, a.DB, sid) {
		said = said || strings.Contains(fmt.Sprint(r["output"]), "unsaved text for draft.txt")
	}
	if !said {
		t.Errorf("no result says the editor holds unsaved text: %v", results(t, a.DB, sid))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("draft.txt was made on disk: %v", err)
	}
}
