package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// scanDirs is one more directory than a scan goes into by default.
const scanDirs = 10001

// TestScanBoundOncePerSession: where commands are recorded by scans
// (sandbox.command.checkpoint "scan", as where the box cannot watch
// them), a workspace of many empty directories (no
// file to count) passes the scan's directory bound on the first command;
// the user is told once that commands are not checkpointed for the rest
// of the session, and the session scans no more, even once the
// directories are gone and the editor has loaded the session again while
// it was open: the second command is not checkpointed either (every
// command paid the walk before). The rewind says what it cannot put
// back. The notice's advice is true: once closed and opened again, the
// session's commands are checkpointed.
func TestScanBoundOncePerSession(t *testing.T) {
	const scenario = `{"turns": [
		{"match": "PROMPT-ONE", "calls": [
			{"tool_calls": [{"name": "run_command", "input": {"command": "printf 'one\\n' > a.txt"}}]},
			{"text": "one done"}]},
		{"match": "PROMPT-TWO", "calls": [
			{"tool_calls": [{"name": "run_command", "input": {"command": "printf 'two\\n' > b.txt"}}]},
			{"text": "two done"}]},
		{"match": "PROMPT-THREE", "calls": [
			{"tool_calls": [{"name": "run_command", "input": {"command": "printf 'three\\n' > b.txt"}}]},
			{"text": "three done"}]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	many := filepath.Join(ws, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range scanDirs - 1 { // many/ is one
		if err := os.Mkdir(filepath.Join(many, fmt.Sprint(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	settings, _ := userSettings(t, `{"sandbox": {"command": {"checkpoint": "scan"}}}`)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), Env: []string{settings}})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "PROMPT-ONE"); stop != "end_turn" {
		t.Fatalf("PROMPT-ONE: %s", stop)
	}
	// Small again: a session that scanned again would checkpoint the next
	// command. Loading the session while it is open here gives the same
	// session back, which scans no more.
	if err := os.RemoveAll(filepath.Join(ws, "many")); err != nil {
		t.Fatal(err)
	}
	a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	if stop := a.Prompt(sid, "PROMPT-TWO"); stop != "end_turn" {
		t.Fatalf("PROMPT-TWO: %s", stop)
	}
	told, advice := 0, ""
	for _, u := range a.Updates(sid) {
		if strings.Contains(u.Text, "not checkpointed for the rest of this session") && strings.Contains(u.Text, "more than 10000 directories") {
			told++
			advice = u.Text
		}
	}
	if told != 1 {
		t.Errorf("told %d times that the session's commands are not checkpointed, want once", told)
	}
	if !strings.Contains(advice, "open the session again in a new bridle, or after closing it (session/close)") {
		t.Errorf("the notice's advice is not what makes the session scan again: %q", advice)
	}
	var unscanned []string
	for _, r := range results(t, a.DB, sid) {
		why, _ := r["unscanned"].(string)
		unscanned = append(unscanned, why)
	}
	if len(unscanned) != 2 || !strings.Contains(unscanned[0], "more than 10000 directories") || unscanned[1] != unscanned[0] {
		t.Errorf("the commands record why they were not scanned as %q, want the bound on both", unscanned)
	}
	if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
		t.Fatalf("/rewind 1: %s", stop)
	}
	rewound := rewoundText(a, sid)
	if !strings.Contains(rewound, "what 2 commands changed since then (not checkpointed: the workspace is too large to scan around each command: more than 10000 directories outside .gitignore)") {
		t.Errorf("the rewind does not say what it cannot put back: %q", rewound)
	}
	for name, want := range map[string]string{"a.txt": "one\n", "b.txt": "two\n"} {
		if b, _ := os.ReadFile(filepath.Join(ws, name)); string(b) != want {
			t.Errorf("%s = %q after the rewind, want %q: no scan saw it change, so nothing puts it back", name, b, want)
		}
	}
	// As the notice says: closed and opened again, the session scans.
	a.MustCall("session/close", map[string]any{"sessionId": sid}, nil)
	a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	if stop := a.Prompt(sid, "PROMPT-THREE"); stop != "end_turn" {
		t.Fatalf("PROMPT-THREE: %s", stop)
	}
	all := results(t, a.DB, sid)
	if why, _ := all[len(all)-1]["unscanned"].(string); why != "" {
		t.Errorf("the command after the session was closed and opened again was not scanned: %q", why)
	}
	a.CloseStdin()
}
