package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/tools"
)

// userEdit stands for the user editing a file in their editor while the
// agent works: it writes outside the agent's tools.
type userEdit struct{ path string }

func (userEdit) Name() string        { return "user_edit" }
func (userEdit) Description() string { return "The user edits a file." }
func (userEdit) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
}
func (userEdit) Kind() tools.Kind          { return tools.KindOther }
func (userEdit) Effect() permission.Effect { return permission.EffectNone }
func (userEdit) Preview(context.Context, *tools.Env, json.RawMessage) (tools.Preview, error) {
	return tools.Preview{Title: "the user edits"}, nil
}
func (u userEdit) Run(_ context.Context, _ *tools.Env, input json.RawMessage) tools.Result {
	var in struct{ Text string }
	json.Unmarshal(input, &in)
	if in.Text == "" {
		os.Remove(u.path)
		return tools.Result{Output: "deleted"}
	}
	os.WriteFile(u.path, []byte(in.Text), 0o644)
	return tools.Result{Output: "edited"}
}

// toolSession is a live session in dir with the built-in tools and
// extra, playing sc.
func toolSession(t *testing.T, sc *scripted.Scenario, dir string, extra ...tools.Tool) *Session {
	t.Helper()
	m, _ := newTestManager(t, sc)
	m.cfg.Tools = append(tools.DefaultTools(), extra...)
	info, err := m.New(context.Background(), NewParams{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Get(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func call(name, input string) scripted.Call {
	return scripted.Call{ToolCalls: []scripted.ToolCall{{Name: name, Input: json.RawMessage(input)}}}
}

// TestFilesCacheAndChangeNotes runs a real session over real files: a
// repeated read is served from the cache, the user's edit is noted once
// with the turn of the read, the agent's own edit is not, and a deletion
// is.
func TestFilesCacheAndChangeNotes(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.go"), filepath.Join(dir, "b.go")
	os.WriteFile(a, []byte("package a\n"), 0o644)
	os.WriteFile(b, []byte("package b\n"), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(a, old, old)
	os.Chtimes(b, old, old)
	sc := &scripted.Scenario{Sequential: true, Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Text: scripted.Chunks{"Hello."}}}},
		{Calls: []scripted.Call{
			call("read_file", `{"path":"a.go"}`),
			call("read_file", `{"path": "a.go"}`), // the same arguments, spelt differently
			call("grep", `{"pattern":"package"}`),
			call("grep", `{"pattern":"package"}`),
			call("user_edit", `{"text":"package a // the user's edit\n"}`),
			call("read_file", `{"path":"a.go"}`),
			call("edit_file", `{"path":"a.go","old_string":"the user's edit","new_string":"the agent's edit"}`),
			call("read_file", `{"path":"b.go"}`),
			call("grep", `{"pattern":"package"}`),
			{Text: scripted.Chunks{"Done."}},
		}},
	}}
	s := toolSession(t, sc, dir, userEdit{path: a})
	if err := s.SetMode(context.Background(), string(permission.ModeAutoEdit)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"first", "second"} {
		if stop, err := prompt(t, s, p); err != nil || stop != StopEndTurn {
			t.Fatalf("prompt %s: %v %v", p, stop, err)
		}
	}

	var results []event.ToolResult
	var changes []event.FileChanged
	for _, e := range s.Events() {
		switch v := e.Payload.(type) {
		case event.ToolResult:
			results = append(results, v)
		case event.FileChanged:
			changes = append(changes, v)
		}
	}
	if len(results) != 9 {
		t.Fatalf("%d results, want 9", len(results))
	}
	wantCached := []bool{false, true, false, true, false, false, false, false, false}
	for i, r := range results {
		if r.Cached != wantCached[i] {
			t.Errorf("result %d (%s): cached = %v, want %v", i, r.Name, r.Cached, wantCached[i])
		}
		if r.IsError {
			t.Errorf("result %d (%s) failed: %s", i, r.Name, r.Output)
		}
	}
	if !strings.Contains(results[5].Output, "the user's edit") {
		t.Errorf("the read after the user's edit shows %q", results[5].Output)
	}
	if !strings.Contains(results[8].Output, "b.go") || results[8].Cached {
		t.Errorf("grep after the agent's edit was served stale: %+v", results[8])
	}
	if len(changes) != 1 || changes[0].Path != a || changes[0].Shown != "a.go" || changes[0].Turn != 2 || changes[0].Version == "" {
		t.Fatalf("file_changed events = %+v, want one for a.go read at turn 2 (the agent's own edit is not one)", changes)
	}
	msgs := contextwin.Project(s.Events())
	var text strings.Builder
	for _, msg := range msgs {
		for _, p := range msg.Parts {
			text.WriteString(p.Text)
		}
	}
	if !strings.Contains(text.String(), "a.go changed on disk after you read it at turn 2") {
		t.Errorf("the projection lacks the note:\n%s", text.String())
	}

	// A deletion is noted too, on the next model call.
	sc.Turns = append(sc.Turns, scripted.Turn{Calls: []scripted.Call{
		call("user_edit", `{"text":""}`),
		{Text: scripted.Chunks{"Noted."}},
	}})
	if _, err := prompt(t, s, "third"); err != nil {
		t.Fatal(err)
	}
	var last event.FileChanged
	n := 0
	for _, e := range s.Events() {
		if v, ok := e.Payload.(event.FileChanged); ok {
			last, n = v, n+1
		}
	}
	if n != 2 || last.Path != a || last.Version != "" || !strings.Contains(contextwin.FileChangedNote(last), "a.go was deleted after you read it") {
		t.Fatalf("after deleting a.go: %d notes, last %+v", n, last)
	}
}

// TestFilesKnownAcrossRestart: what the model saw is rebuilt from the log,
// so an edit made while bridle was not running is noted on the next call.
func TestFilesKnownAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.go")
	os.WriteFile(a, []byte("package a\n"), 0o644)
	sc := &scripted.Scenario{Sequential: true, Turns: []scripted.Turn{
		{Calls: []scripted.Call{call("read_file", `{"path":"a.go"}`), {Text: scripted.Chunks{"Read."}}}},
		{Calls: []scripted.Call{{Text: scripted.Chunks{"Again."}}}},
	}}
	s := toolSession(t, sc, dir)
	m := s.m
	if _, err := prompt(t, s, "first"); err != nil {
		t.Fatal(err)
	}
	// The session is rebuilt from its log, as after a restart.
	s.close()
	s2, err := newSession(m, s.row, s.Events())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.close()
	os.WriteFile(a, []byte("package a // edited while bridle was down\n"), 0o644)
	got := s2.files().check()
	if len(got) != 1 || got[0].Path != a || got[0].Turn != 1 {
		t.Fatalf("changes after the restart = %+v", got)
	}
	if again := s2.files().check(); len(again) != 0 {
		t.Fatalf("a change was noted twice: %+v", again)
	}
}

// TestChildReadsAreNotTheParents: a file only a subagent read changes; the
// parent, whose window never held it, is not told it read it.
func TestChildReadsAreNotTheParents(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.go")
	os.WriteFile(a, []byte("package a\n"), 0o644)
	sc := &scripted.Scenario{Turns: []scripted.Turn{
		{Match: "parent", Calls: []scripted.Call{
			call("task", `{"description":"read","prompt":"CHILD: read a.go"}`),
			call("user_edit", `{"text":"package a // edited\n"}`),
			{Text: scripted.Chunks{"Done."}},
		}},
		{Match: "CHILD", Calls: []scripted.Call{
			call("read_file", `{"path":"a.go"}`),
			{Text: scripted.Chunks{"It is package a."}},
		}},
	}}
	s := toolSession(t, sc, dir, userEdit{path: a})
	if stop, err := prompt(t, s, "parent"); err != nil || stop != StopEndTurn {
		t.Fatalf("prompt: %v %v", stop, err)
	}
	finished := false
	for _, e := range s.Events() {
		switch v := e.Payload.(type) {
		case event.SubagentFinished:
			finished = v.Status == "completed"
		case event.FileChanged:
			t.Fatalf("the parent was told it read %s, which only its subagent read", v.Path)
		}
	}
	if !finished {
		t.Fatal("the subagent did not complete its read")
	}
}
