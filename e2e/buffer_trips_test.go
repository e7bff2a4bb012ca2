package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acpclient"
	"github.com/bridle-dev/bridle/internal/acptest"
)

// readThenEdit is a turn that reads src/app.go and then changes it with
// the given call.
func readThenEdit(edit string) string {
	return `{"turns": [{"calls": [
		{"tool_calls": [{"name": "read_file", "input": {"path": "src/app.go"}}]},
		{"tool_calls": [` + edit + `]},
		{"text": "Done."}]}]}`
}

const editOld = `{"name": "edit_file", "input": {"path": "src/app.go", "old_string": "\"old\"", "new_string": "\"new\""}}`

// TestReadThenEditAsksTheEditorTwice: a read_file and then an edit_file of
// the same file ask the editor for its text twice: once for the read, and
// once right before the edit is written, to see that the buffer still
// holds what the edit was planned on (the text the model read). Before,
// the edit's preview, its plan, its card and its run each asked again:
// five questions.
func TestReadThenEditAsksTheEditorTwice(t *testing.T) {
	for _, mode := range []string{"auto-edit", "ask"} {
		t.Run(mode, func(t *testing.T) {
			ws := acptest.Workspace(t, map[string]string{"src/app.go": "package app\n\nconst Name = \"old\"\n"})
			path := filepath.Join(ws, "src/app.go")
			ed := newEditor(map[string]string{path: "package app\n\nconst Name = \"old\" // unsaved\n"})
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, readThenEdit(editOld))})
			a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
				if m.Method == "session/request_permission" {
					return acpclient.FirstOption(m)
				}
				return ed.handle(t)(m)
			}
			a.InitializeWith(true, true)
			sid := a.NewSession(ws)
			a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": mode}, nil)
			if stop := a.Prompt(sid, "edit it"); stop != "end_turn" {
				t.Fatalf("stopReason = %q", stop)
			}
			res := results(t, a.DB, sid)
			if len(res) != 2 || !strings.Contains(fmt.Sprint(res[1]["output"]), "Edited src/app.go (through the editor)") {
				t.Fatalf("results: %v", res)
			}
			ed.mu.Lock()
			defer ed.mu.Unlock()
			if len(ed.reads) > 2 {
				t.Errorf("the editor was asked for the file's text %d times, want 2 (the read, and the check before the write)", len(ed.reads))
			}
			if got := ed.buffers[path]; got != "package app\n\nconst Name = \"new\" // unsaved\n" {
				t.Errorf("the buffer holds %q, want the edit on the unsaved text", got)
			}
			a.AssertValid(t)
		})
	}
}

// TestAnEditIsNotWrittenOverTextTheModelDidNotSee: the user types in the
// buffer after the model read it (or while being asked to approve the
// edit); the edit, planned on what the model read, is refused, and the
// buffer keeps what the user typed. Before, write_file planned on the
// buffer as it was then and wrote over the user's text.
func TestAnEditIsNotWrittenOverTextTheModelDidNotSee(t *testing.T) {
	const read = "package app\n\nconst Name = \"old\"\n"
	const typed = "package app\n\n// typed by the user\nconst Name = \"old\"\n"
	for _, tt := range []struct {
		name, edit, mode string
		typeWhenAsked    bool // type while the permission question is open, not after the read
	}{
		{name: "edit_file after the read", edit: editOld, mode: "auto-edit"},
		{name: "write_file after the read", edit: `{"name": "write_file", "input": {"path": "src/app.go", "content": "package app\n"}}`, mode: "auto-edit"},
		{name: "edit_file while asked", edit: editOld, mode: "ask", typeWhenAsked: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := acptest.Workspace(t, map[string]string{"src/app.go": read})
			path := filepath.Join(ws, "src/app.go")
			ed := newEditor(map[string]string{path: read})
			typeNow := func() {
				ed.mu.Lock()
				ed.buffers[path] = typed
				ed.mu.Unlock()
			}
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, readThenEdit(tt.edit))})
			reads := 0
			a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
				if m.Method == "session/request_permission" {
					if tt.typeWhenAsked {
						typeNow()
					}
					return acpclient.FirstOption(m)
				}
				res, err := ed.handle(t)(m)
				if m.Method == "fs/read_text_file" {
					if reads++; reads == 1 && !tt.typeWhenAsked {
						typeNow() // right after the model's read was answered
					}
				}
				return res, err
			}
			a.InitializeWith(true, true)
			sid := a.NewSession(ws)
			a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": tt.mode}, nil)
			if stop := a.Prompt(sid, "change it"); stop != "end_turn" {
				t.Fatalf("stopReason = %q", stop)
			}
			res := results(t, a.DB, sid)
			if len(res) != 2 {
				t.Fatalf("results: %v", res)
			}
			if out := fmt.Sprint(res[1]["output"]); res[1]["is_error"] != true || !strings.Contains(out, "changed since this edit was planned") {
				t.Errorf("the edit's result = %v %q, want it refused as planned on a text that changed", res[1]["is_error"], out)
			}
			if got := ed.buffer(path); got != typed {
				t.Errorf("the buffer holds %q, want what the user typed, %q", got, typed)
			}
			ed.mu.Lock()
			defer ed.mu.Unlock()
			if len(ed.writes) != 0 {
				t.Errorf("the editor was asked to write %v", ed.writes)
			}
			a.AssertValid(t)
		})
	}
}
