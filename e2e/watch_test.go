package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// watchTurns reads a file, then (after the user edited it) answers, then
// reads it twice more.
const watchTurns = `{
  "turns": [
    {"calls": [
      {"tool_calls": [{"name": "read_file", "input": {"path": "src/a.go"}}]},
      {"text": "Read it."}
    ]},
    {"calls": [
      {"tool_calls": [{"name": "read_file", "input": {"path": "src/a.go"}}]},
      {"tool_calls": [{"name": "read_file", "input": {"path": "src/a.go"}}]},
      {"text": "Read it again."}
    ]}
  ]
}`

// TestChangedFileThroughTheBinary: the user edits a file the model read;
// the next request says so, the log has file_changed, and a repeated read
// of the unchanged file is served from the cache.
func TestChangedFileThroughTheBinary(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"src/a.go": "package a\n"})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, watchTurns), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "read a.go"); stop != "end_turn" {
		t.Fatalf("first prompt: %s", stop)
	}
	file := filepath.Join(ws, "src", "a.go")
	if err := os.WriteFile(file, []byte("package a // edited in the editor\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Older than the cache's racy window, so the next read may be kept.
	old := time.Now().Add(-time.Minute)
	os.Chtimes(file, old, old)
	if stop := a.Prompt(sid, "and now?"); stop != "end_turn" {
		t.Fatalf("second prompt: %s", stop)
	}
	a.CloseStdin()

	var kinds []string
	var cached []bool
	for _, e := range acptest.Log(t, a.DB, sid) {
		kinds = append(kinds, e["kind"].(string))
		if e["kind"] == "tool_result" {
			p := e["payload"].(map[string]any)
			c, _ := p["cached"].(bool)
			cached = append(cached, c)
		}
	}
	if n := strings.Count(strings.Join(kinds, " "), "file_changed"); n != 1 {
		t.Errorf("%d file_changed events, want 1: %v", n, kinds)
	}
	if len(cached) != 3 || cached[0] || cached[1] || !cached[2] {
		t.Errorf("cached = %v, want only the third read served from the cache", cached)
	}
	data, _ := os.ReadFile(requests)
	if !bytes.Contains(data, []byte("src/a.go changed on disk after you read it at turn 1")) {
		t.Errorf("no request told the model that src/a.go changed")
	}
	if out, err := acptest.Run(t, "log", "--db", a.DB, sid); err != nil || !strings.Contains(out, "file_changed") {
		t.Errorf("bridle log does not show the change (%v):\n%s", err, out)
	}
}
