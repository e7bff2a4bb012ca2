package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// windowScenario prints a .env value after padding that puts it across
// the 64 KiB boundaries of run_command's output (65,530 and 131,060
// bytes of x before "K=value"), and then the value over and over with
// nothing between. Each output is written to a file first and printed by
// one cat, so that it reaches bridle in full pipe reads, as a fast
// command's output does, rather than as the shell happens to write it.
var windowScenario = `{
  "turns": [
    {"calls": [
      {"tool_calls": [
        {"name": "run_command", "input": {"command": "{ head -c 65530 /dev/zero | tr '\\0' x; cat .env; } > \"$TMPDIR/out\"; cat \"$TMPDIR/out\""}},
        {"name": "run_command", "input": {"command": "{ head -c 131060 /dev/zero | tr '\\0' x; cat .env; } > \"$TMPDIR/out\"; cat \"$TMPDIR/out\""}},
        {"name": "run_command", "input": {"command": "v=$(cut -d= -f2 .env); i=0; while [ $i -lt 9000 ]; do printf %s \"$v\"; i=$((i+1)); done > \"$TMPDIR/out\"; cat \"$TMPDIR/out\""}}
      ]},
      {"text": "Done."}
    ]}
  ]
}`

// TestStreamWindowSecretThroughTheBinary: a .env value that command
// output puts across a redaction window's boundary reaches neither the
// editor, nor the stored artifacts, nor the log, nor the model.
func TestStreamWindowSecretThroughTheBinary(t *testing.T) {
	value := "dotenvwin-" + "Hx7Pq2Zr9Lk4Vm"
	ws := acptest.Workspace(t, map[string]string{".env": "K=" + value + "\n"})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, windowScenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "print the config"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	events, rerr := a.Call("_bridle/events", map[string]any{"sessionId": sid})
	if rerr != nil {
		t.Fatal(rerr)
	}
	a.CloseStdin()

	marker := []byte("[REDACTED:.env:K]")
	var results []string
	for _, u := range a.Updates(sid) {
		if u.Kind == "tool_call_update" && u.Fields["status"] != nil && u.Fields["status"] != "in_progress" {
			b, _ := json.Marshal(u.Fields)
			results = append(results, string(b))
		}
	}
	if len(results) != 3 {
		t.Fatalf("%d finished tool calls, want 3", len(results))
	}
	for i, r := range results {
		if !strings.Contains(r, string(marker)) {
			t.Errorf("tool result %d as the editor saw it holds no redaction marker: %.300s…", i, r)
		}
	}

	where := map[string][]byte{"_bridle/events": events}
	where["provider requests"], _ = os.ReadFile(requests)
	var sent bytes.Buffer
	for _, s := range a.Sent() {
		sent.Write(s.Raw)
	}
	where["sent to the editor"] = sent.Bytes()
	artifacts := 0
	filepath.Walk(filepath.Dir(a.DB), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			where[p], _ = os.ReadFile(p)
			if strings.Contains(p, string(filepath.Separator)+"artifacts"+string(filepath.Separator)) {
				artifacts++
				if !bytes.Contains(where[p], marker) {
					t.Errorf("artifact %s holds no redaction marker", p)
				}
			}
		}
		return nil
	})
	if artifacts != 3 {
		t.Errorf("%d artifacts, want one for each of the 3 long outputs", artifacts)
	}
	if !bytes.Contains(where["provider requests"], marker) {
		t.Errorf("the provider requests hold no redaction marker")
	}
	for name, data := range where {
		if bytes.Contains(data, []byte(value)) {
			t.Errorf("%s holds the .env value", name)
		}
	}
}
