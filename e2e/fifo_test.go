package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
