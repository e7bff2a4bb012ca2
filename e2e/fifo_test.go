//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// pipeCalls aims every file tool at a named pipe.
const pipeCalls = `{
  "turns": [{"calls": [
    {"tool_calls": [
      {"name": "read_file", "input": {"path": "pipe"}},
      {"name": "grep", "input": {"pattern": "needle"}},
      {"name": "edit_file", "input": {"path": "pipe", "old_string": "a", "new_string": "b"}},
      {"name": "write_file", "input": {"path": "pipe", "content": "x"}},
      {"name": "list_dir", "input": {"path": "pipe"}}
    ]},
    {"text": "Done."}
  ]}]
}`

// TestNamedPipesDoNotHang: a repository with named pipes where files are
// expected (a file the model reads, AGENTS.md, .gitignore) answers the
// prompt, every other request, and exits on end of input.
func TestNamedPipesDoNotHang(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "needle\n"})
	for _, p := range []string{"pipe", "AGENTS.md", ".gitignore"} {
		if err := syscall.Mkfifo(filepath.Join(ws, p), 0o644); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
	}
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, pipeCalls)})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "look at the pipe"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	a.MustCall("session/list", map[string]any{}, nil)
	var refused int
	for _, r := range acptest.Log(t, a.DB, sid) {
		if r["kind"] != "tool_result" {
			continue
		}
		p, _ := r["payload"].(map[string]any)
		if out, _ := p["output"].(string); strings.Contains(out, "named pipe") || strings.Contains(out, "not a directory") {
			refused++
		}
	}
	if refused < 4 {
		t.Errorf("%d of the calls on the pipe were refused as such, want read, edit, write and list", refused)
	}
	if code := a.CloseStdin(); code != 0 {
		t.Errorf("exit code %d after end of input", code)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "pipe")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", fi, err)
	}
}

// TestGitignorePipeSwapDoesNotHangClose: while the session's watcher
// runs, a named pipe and a regular file are renamed over .gitignore (at
// the top, in a directory, and in a directory just made), again and
// again: the watcher reads every .gitignore after each change. It opens
// each one once, without waiting, and refuses the pipe. Before, it looked
// at the type and then opened the file: a pipe renamed over it in between
// blocked the open forever, and session/close, which stops the watcher,
// never answered. A command can rename pipes in the workspace as well
// (mkfifo and mv in the box); the test renames them itself, as fast as it
// can, so that it meets the old window every time.
func TestGitignorePipeSwapDoesNotHangClose(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{".gitignore": "*.log\n", "sub/.gitignore": "*.tmp\n", "notes.txt": "x\n"})
	scenario := `{"turns": [{"calls": [{"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]}, {"text": "Read."}]}]}`
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := a.NewSession(ws)
	// The watcher starts with the session's first tool call.
	if stop := a.Prompt(sid, "read"); stop != "end_turn" {
		t.Fatalf("prompt: %s", stop)
	}
	for i := range 1000 {
		for _, d := range []string{ws, filepath.Join(ws, "sub")} {
			renameOver(t, filepath.Join(d, ".gitignore"), true)
			renameOver(t, filepath.Join(d, ".gitignore"), false)
		}
		nd := filepath.Join(ws, fmt.Sprintf("new%d", i))
		if err := os.Mkdir(nd, 0o755); err != nil {
			t.Fatal(err)
		}
		renameOver(t, filepath.Join(nd, ".gitignore"), false)
		renameOver(t, filepath.Join(nd, ".gitignore"), true)
		if err := os.RemoveAll(nd); err != nil {
			t.Fatal(err)
		}
	}
	_, answer := a.Request("session/close", map[string]string{"sessionId": sid})
	// A hang guard, not a timing assertion: closing stops the watcher.
	if m, err := a.Conn.Wait(answer, time.Minute); err != nil {
		t.Fatalf("session/close has not answered after a minute: the watcher waits on a named pipe (%v)", err)
	} else if m.Error != nil {
		t.Fatalf("session/close: %+v", m.Error)
	}
}

// renameOver puts a named pipe (or a regular file) at name by renaming
// one over it.
func renameOver(t *testing.T, name string, pipe bool) {
	t.Helper()
	tmp := name + ".tmp"
	var err error
	if pipe {
		err = syscall.Mkfifo(tmp, 0o644)
	} else {
		err = os.WriteFile(tmp, []byte("*.log\n"), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		t.Fatal(err)
	}
}
