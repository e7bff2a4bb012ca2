//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestHeadlessHooksAndBackground: a headless run plays the user's hooks
// and prompt commands as a session in an editor does, and a command the
// model started in the background ends with the run: stopped, recorded,
// no process left.
func TestHeadlessHooksAndBackground(t *testing.T) {
	marker := fmt.Sprintf("sleep %d", 400+os.Getpid()%500)
	scenario := `{"turns": [{"calls": [
		{"tool_calls": [{"name": "run_command", "input": {"command": "` + marker + `", "background": true}}]},
		{"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
		{"text": "done"}
	]}]}`
	env, _ := userSettings(t, `{"hooks": {"PreToolUse": [{"matcher": "read_file", "command": "echo 'notes stay closed in CI' >&2; exit 2"}]}}`)
	ws := acptest.Workspace(t, map[string]string{
		"notes.txt":              "hello\n",
		".bridle/commands/go.md": "---\ndescription: Go on\n---\nPlease go on with $ARGUMENTS\n",
	})
	db := filepath.Join(t.TempDir(), "b.db")
	out, errs, code := runHeadless(t, []string{env}, "", "run", "--json", "--mode", "full-auto", "--db", db,
		"--model", acptest.Scenario(t, scenario), "--cwd", ws, "/go the work")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	var last struct {
		SessionID string `json:"sessionId"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if last.SessionID == "" {
		t.Fatalf("no result line:\n%s", out)
	}
	var kinds []string
	var prompt, hook, finished string
	for _, e := range acptest.Log(t, db, last.SessionID) {
		b, _ := json.Marshal(e)
		switch e["kind"] {
		case "user_message":
			prompt = string(b)
		case "hook_ran":
			hook = string(b)
		case "command_finished":
			finished = string(b)
		}
		kinds = append(kinds, fmt.Sprint(e["kind"]))
	}
	if !strings.Contains(prompt, "Please go on with the work") || !strings.Contains(prompt, `"go"`) {
		t.Errorf("the prompt command was not expanded and recorded: %s", prompt)
	}
	if !strings.Contains(hook, "notes stay closed in CI") {
		t.Errorf("the PreToolUse hook's refusal is not recorded: %q (log: %v)", hook, kinds)
	}
	if !strings.Contains(finished, "stopped") {
		t.Errorf("the background command's end is not recorded as stopped: %q (log: %v)", finished, kinds)
	}
	if left := processesRunning(marker); len(left) > 0 {
		t.Errorf("the background command outlived the run: %v", left)
	}
}

// processesRunning lists the pids whose command line is cmdline.
func processesRunning(cmdline string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ") == cmdline {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
