package e2e

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// editor is an ACP client's files: buffers the user has not saved, over
// the disk. It answers fs/read_text_file from a buffer (else the disk, as
// editors do) and takes fs/write_text_file into a buffer, unsaved, so a
// test can tell which way bridle went. A write of a file that is not on
// disk makes it there too, as an editor saves a file it is asked to
// create (Zed saves what an agent writes), unless keepNew is set.
type editor struct {
	mu      sync.Mutex
	buffers map[string]string
	reads   []string
	writes  []string
	// written is the content of each write, in order.
	written []string
	// fail answers every fs call with an error.
	fail bool
	// keepNew keeps a file it is asked to create in an unsaved buffer
	// only, as an editor whose settings do not save would.
	keepNew bool
	// hold, while set, leaves calls of holdMethod (fs/read_text_file
	// when empty) unanswered until it is closed: an editor that hangs.
	hold       chan struct{}
	holdMethod string
	// held receives the path of each read it holds.
	held chan string
}

func newEditor(buffers map[string]string) *editor {
	return &editor{buffers: buffers}
}

func (e *editor) handle(t *testing.T) func(acptest.Msg) (any, *acptest.RPCError) {
	return func(m acptest.Msg) (any, *acptest.RPCError) {
		var p struct{ Path, Content string }
		p.Path, p.Content = fsParams(m)
		e.mu.Lock()
		hold, held, method := e.hold, e.held, cmp.Or(e.holdMethod, "fs/read_text_file")
		e.mu.Unlock()
		if hold != nil && m.Method == method {
			held <- p.Path
			<-hold
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		switch m.Method {
		case "fs/read_text_file":
			e.reads = append(e.reads, p.Path)
			if e.fail {
				return nil, &acptest.RPCError{Code: -32603, Message: "the buffer is locked"}
			}
			if text, ok := e.buffers[p.Path]; ok {
				return map[string]string{"content": text}, nil
			}
			return fromDisk(p.Path)
		case "fs/write_text_file":
			e.writes = append(e.writes, p.Path)
			e.written = append(e.written, p.Content)
			if e.fail {
				return nil, &acptest.RPCError{Code: -32603, Message: "the buffer is read-only"}
			}
			if _, err := os.Lstat(p.Path); os.IsNotExist(err) && !e.keepNew {
				if err := os.WriteFile(p.Path, []byte(p.Content), 0o644); err != nil {
					return nil, &acptest.RPCError{Code: -32603, Message: "cannot create the file: " + err.Error()}
				}
			}
			e.buffers[p.Path] = p.Content
			return nil, nil
		}
		t.Errorf("bridle asked %s: %s", m.Method, m.Params)
		return nil, &acptest.RPCError{Code: -32601, Message: "not expected"}
	}
}

func (e *editor) buffer(path string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.buffers[path]
}

// bufferScenario reads a file the user changed without saving, edits
// another, rewrites the first, creates a new one and tries a file outside
// the workspace.
const bufferScenario = `{"turns": [{"calls": [
	{"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
	{"tool_calls": [{"name": "edit_file", "input": {"path": "src/app.go", "old_string": "\"old\"", "new_string": "\"new\""}}]},
	{"tool_calls": [{"name": "write_file", "input": {"path": "notes.txt", "content": "rewritten\n"}}]},
	{"tool_calls": [{"name": "write_file", "input": {"path": "fresh/new.txt", "content": "created\n"}}]},
	{"tool_calls": [{"name": "read_file", "input": {"path": "../outside.txt"}}]},
	{"text": "Done."}
]}]}`

// TestFileToolsGoThroughTheEditorsBuffers runs the same turn for a client
// that offers its buffers (ACP fs), one that does not, one that offers
// only one half of fs, and one whose fs calls fail: reads see unsaved
// text and edits land in the editor, or everything is on disk, or reads
// fall back to the disk and edits are refused, with nothing written
// behind the editor's back. A half offer is the disk: an edit planned on
// the buffer and written to the disk, or planned on the disk and written
// over the buffer, would lose the user's unsaved text.
func TestFileToolsGoThroughTheEditorsBuffers(t *testing.T) {
	disk := map[string]string{"notes.txt": "rewritten\n", "src/app.go": "package app\n\nconst Name = \"new\"\n",
		"fresh/new.txt": "created\n"}
	untouched := map[string]string{"notes.txt": "hello from the buffer\n", "src/app.go": "package app\n\nconst Name = \"old\" // unsaved\n"}
	onDisk := []string{"hello from disk", "Edited src/app.go: 1", "Wrote notes.txt (", "Created fresh/new.txt", "outside"}
	tests := []struct {
		name         string
		read, write  bool // the halves of fs the client offers
		fail         bool
		wantResults  []string // what each tool result says, in order
		wantDisk     map[string]string
		wantBuffers  map[string]string
		wantWrites   int
		wantNoReads  bool
		wantFallback bool
	}{
		{
			name: "buffers", read: true, write: true,
			wantResults: []string{"[from the editor's buffer]", "Edited src/app.go (through the editor)", "Wrote notes.txt (through the editor)",
				"Created fresh/new.txt (through the editor)", "outside"},
			wantDisk: map[string]string{"notes.txt": "hello from disk\n", "src/app.go": "package app\n\nconst Name = \"old\"\n",
				"fresh/new.txt": "created\n"},
			wantBuffers: map[string]string{"notes.txt": "rewritten\n", "src/app.go": "package app\n\nconst Name = \"new\" // unsaved\n",
				"fresh/new.txt": "created\n"},
			wantWrites: 3,
		},
		{name: "disk", wantNoReads: true, wantResults: onDisk, wantDisk: disk, wantBuffers: untouched},
		{name: "read half only", read: true, wantNoReads: true, wantResults: onDisk, wantDisk: disk, wantBuffers: untouched},
		{name: "write half only", write: true, wantNoReads: true, wantResults: onDisk, wantDisk: disk, wantBuffers: untouched},
		{
			name: "failing editor", read: true, write: true, fail: true,
			wantResults: []string{"[read from disk: the editor could not give notes.txt: error -32603: the buffer is locked]",
				"the editor could not give src/app.go", "the editor could not give notes.txt",
				"the editor did not take the new text of fresh/new.txt", "outside"},
			wantDisk: map[string]string{"notes.txt": "hello from disk\n", "src/app.go": "package app\n\nconst Name = \"old\"\n",
				"fresh/new.txt": ""}, // not made: the editor refused it
			wantBuffers: map[string]string{"notes.txt": "hello from the buffer\n", "src/app.go": "package app\n\nconst Name = \"old\" // unsaved\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello from disk\n", "src/app.go": "package app\n\nconst Name = \"old\"\n"})
			os.WriteFile(filepath.Join(filepath.Dir(ws), "outside.txt"), []byte("secret outside\n"), 0o644)
			ed := newEditor(map[string]string{
				filepath.Join(ws, "notes.txt"):  "hello from the buffer\n",
				filepath.Join(ws, "src/app.go"): "package app\n\nconst Name = \"old\" // unsaved\n",
			})
			ed.fail = tt.fail
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, bufferScenario)})
			a.OnRequest = ed.handle(t)
			a.InitializeWith(tt.read, tt.write)
			sid := a.NewSession(ws)
			a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
			if stop := a.Prompt(sid, "work on the files"); stop != "end_turn" {
				t.Fatalf("stopReason = %q", stop)
			}
			a.CloseStdin()

			res := results(t, a.DB, sid)
			if len(res) != len(tt.wantResults) {
				t.Fatalf("%d tool results, want %d: %v", len(res), len(tt.wantResults), res)
			}
			for i, want := range tt.wantResults {
				if out, _ := res[i]["output"].(string); !strings.Contains(out, want) {
					t.Errorf("result %d = %q, want it to say %q", i+1, out, want)
				}
			}
			if out := res[0]["output"].(string); tt.read && tt.write && !tt.fail && !strings.Contains(out, "hello from the buffer") {
				t.Errorf("the read did not show the unsaved text: %q", out)
			}
			for rel, want := range tt.wantDisk {
				if b, _ := os.ReadFile(filepath.Join(ws, rel)); string(b) != want {
					t.Errorf("%s on disk = %q, want %q", rel, b, want)
				}
			}
			for rel, want := range tt.wantBuffers {
				if got := ed.buffer(filepath.Join(ws, rel)); got != want {
					t.Errorf("%s in the editor = %q, want %q", rel, got, want)
				}
			}
			ed.mu.Lock()
			defer ed.mu.Unlock()
			if !tt.fail && len(ed.writes) != tt.wantWrites {
				t.Errorf("the editor was asked to write %v, want %d writes", ed.writes, tt.wantWrites)
			}
			if tt.wantNoReads && len(ed.reads)+len(ed.writes) > 0 {
				t.Errorf("a client that offers no fs, or half of it, was asked to read %v and write %v", ed.reads, ed.writes)
			}
			for _, p := range append(slices.Clone(ed.reads), ed.writes...) {
				if !strings.HasPrefix(p, ws+string(filepath.Separator)) {
					t.Errorf("the editor was asked about %s, outside the workspace %s", p, ws)
				}
			}
			a.AssertValid(t)
		})
	}
}

// TestEditThroughTheEditorSurvivesACrash: bridle dies after the editor
// took an edit and before the result was recorded; the restarted bridle
// finds the edit in the editor's buffer and does not apply it again.
func TestEditThroughTheEditorSurvivesACrash(t *testing.T) {
	scenario := `{"turns": [{"calls": [
		{"tool_calls": [{"name": "edit_file", "input": {"path": "app.go", "old_string": "1", "new_string": "12"}}]},
		{"text": "Done."}
	]}]}`
	ws := acptest.Workspace(t, map[string]string{"app.go": "const N = 1\n"})
	path := filepath.Join(ws, "app.go")
	ed := newEditor(map[string]string{path: "const N = 1 // unsaved\n"})
	model := acptest.Scenario(t, scenario)
	a := acptest.Start(t, acptest.Options{Model: model, Env: []string{"BRIDLE_FAULT=tool:1"}})
	a.OnRequest = ed.handle(t)
	a.InitializeWith(true, true)
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
	a.Request("session/prompt", acptest.PromptParams(sid, "make it 12"))
	a.WaitExit()
	if got := ed.buffer(path); got != "const N = 12 // unsaved\n" {
		t.Fatalf("before the restart the editor holds %q: the edit should have reached it", got)
	}

	b := restartWithEditor(t, a.DB, model, sid, ws, ed, "the edit was applied before bridle restarted")
	var res []map[string]any
	for _, e := range acptest.Log(t, b.DB, sid) {
		if e["kind"] == "tool_result" {
			res = append(res, e["payload"].(map[string]any))
		}
	}
	if len(res) != 1 || !strings.Contains(res[0]["output"].(string), "the edit was applied before bridle restarted") {
		t.Fatalf("recovered results %v, want one saying the edit had landed", res)
	}
	ed.mu.Lock()
	writes := len(ed.writes)
	ed.mu.Unlock()
	if got := ed.buffer(path); writes != 1 || got != "const N = 12 // unsaved\n" {
		t.Fatalf("%d writes, buffer %q: the edit was applied again", writes, got)
	}
	if disk, _ := os.ReadFile(path); string(disk) != "const N = 1\n" {
		t.Fatalf("the disk holds %q: bridle wrote behind the editor", disk)
	}
	b.CloseStdin()
}

// restartWithEditor starts bridle again on db with the editor ed, loads
// session sid and waits for an update saying note: an edit a crash cut
// short is settled once the editor can be asked, after the answer to
// session/load, and its card then says how.
func restartWithEditor(t *testing.T, db, model, sid, ws string, ed *editor, note string) *acptest.Agent {
	t.Helper()
	b := acptest.Start(t, acptest.Options{DB: db, Model: model})
	b.OnRequest = ed.handle(t)
	b.InitializeWith(true, true)
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	b.WaitNote(func(m acptest.Msg) bool {
		return m.Method == "session/update" && strings.Contains(string(m.Params), note)
	})
	return b
}
