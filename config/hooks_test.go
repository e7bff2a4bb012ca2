package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseHooks: the "hooks" section as written, and what is wrong
// with a bad one, said with where.
func TestParseHooks(t *testing.T) {
	for _, c := range []struct {
		name, raw string
		n         int
		err       string
	}{
		{"two events", `{"PreToolUse": [{"matcher": "run_command", "command": "check"}], "Stop": [{"command": "notify", "timeout_seconds": 5}]}`, 2, ""},
		{"every tool", `{"PostToolUse": [{"matcher": "*", "command": "log"}, {"command": "log2"}]}`, 2, ""},
		{"unknown event", `{"BeforeTool": [{"command": "x"}]}`, 0, `unknown event "BeforeTool"`},
		{"no command", `{"Stop": [{"command": "  "}]}`, 0, `"hooks".Stop[0] has no "command"`},
		{"misspelt key", `{"Stop": [{"comand": "x"}]}`, 0, "comand"},
		{"bad matcher", `{"PreToolUse": [{"matcher": "(", "command": "x"}]}`, 0, "not a regular expression"},
		{"matcher on a prompt", `{"UserPromptSubmit": [{"matcher": "x", "command": "x"}]}`, 0, "PreToolUse and PostToolUse only"},
		{"long timeout", `{"Stop": [{"command": "x", "timeout_seconds": 601}]}`, 0, "not between 1 and 600"},
	} {
		hooks, err := parseHooks(json.RawMessage(c.raw), "/s.json", "user")
		switch {
		case c.err == "" && (err != nil || len(hooks) != c.n):
			t.Errorf("%s: %d hooks, %v; want %d", c.name, len(hooks), err, c.n)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.err)
		}
	}
	hooks, _ := parseHooks(json.RawMessage(`{"PreToolUse": [{"matcher": "edit_file|write_file", "command": "fmt"}]}`), "/s.json", "user")
	for tool, want := range map[string]bool{"edit_file": true, "write_file": true, "run_command": false, "xedit_file": false} {
		if got := hooks[0].Matches(tool); got != want {
			t.Errorf("matcher edit_file|write_file on %s: %v, want %v", tool, got, want)
		}
	}
}
