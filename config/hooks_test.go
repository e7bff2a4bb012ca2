package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/sandbox/confine"
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

// TestProjectHooksNeedTrust: a project's hooks are not read until the
// user trusts the project (even a malformed section is only a warning),
// and then run after the user's, marked as the project's.
func TestProjectHooksNeedTrust(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(proj, ".bridle"), 0o755)
	os.WriteFile(ProjectPath(proj), []byte(`{"hooks": {"PreToolUse": [{"command": "project-check"}], "Nonsense": 1}}`), 0o644)
	user := filepath.Join(home, "settings.json")
	os.WriteFile(user, []byte(`{"hooks": {"Stop": [{"command": "notify"}]}}`), 0o644)
	s, err := Load(user, proj, confine.ProjectFiles{}, Pins{Dir: t.TempDir()})
	if err != nil || len(s.Hooks) != 1 || s.Hooks[0].Whose != "user" || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], `"hooks" are ignored`) {
		t.Fatalf("untrusted: %v, hooks %+v, warnings %q", err, s.Hooks, s.Warnings)
	}
	os.WriteFile(ProjectPath(proj), []byte(`{"hooks": {"PreToolUse": [{"command": "project-check"}]}}`), 0o644)
	os.WriteFile(user, []byte(fmt.Sprintf(`{"trusted_projects": [%q], "hooks": {"Stop": [{"command": "notify"}]}}`, proj)), 0o644)
	s, err = Load(user, proj, confine.ProjectFiles{}, Pins{Dir: t.TempDir()})
	if err != nil || len(s.Hooks) != 2 || s.Hooks[0].Whose != "user" || s.Hooks[1].Whose != "project" || s.Hooks[1].Command != "project-check" {
		t.Fatalf("trusted: %v, hooks %+v", err, s.Hooks)
	}
}
