package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

func TestMain(m *testing.M) {
	box.MaybeRunHelper()
	os.Exit(m.Run())
}

// testEnv returns an Env over a fresh workspace, with artifacts.
func testEnv(t *testing.T) *Env {
	t.Helper()
	dir := t.TempDir()
	root, err := confine.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	arts, err := NewArtifacts(filepath.Join(t.TempDir(), "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Root: root, Key: "sess/7/0", Artifacts: arts, Redactor: redact.New(nil)}
}

func call(t *testing.T, tool Tool, env *Env, input string) Result {
	t.Helper()
	return tool.Run(context.Background(), env, json.RawMessage(input))
}

func tools() []Tool { return NewTools(config.Sandbox{}, box.New(box.Options{})) }

func byName(name string) Tool {
	for _, t := range tools() {
		if t.Name() == name {
			return t
		}
	}
	panic("no tool " + name)
}

func TestModeCatalogues(t *testing.T) {
	want := map[permission.Mode][]string{
		permission.ModeReadOnly: {"read_file", "list_dir", "glob", "grep", "read_artifact", "web_fetch", "command_output", "command_stop", "remember", "plan"},
		permission.ModeAsk:      {"read_file", "list_dir", "glob", "grep", "read_artifact", "edit_file", "write_file", "run_command", "web_fetch", "command_output", "command_input", "command_stop", "remember", "plan"},
		permission.ModeAutoEdit: {"read_file", "list_dir", "glob", "grep", "read_artifact", "edit_file", "write_file", "run_command", "web_fetch", "command_output", "command_input", "command_stop", "remember", "plan"},
		permission.ModeFullAuto: {"read_file", "list_dir", "glob", "grep", "read_artifact", "edit_file", "write_file", "run_command", "web_fetch", "command_output", "command_input", "command_stop", "remember", "plan"},
	}
	asks := map[permission.Mode][]string{
		permission.ModeReadOnly: nil,
		permission.ModeAsk:      {"edit_file", "write_file", "run_command", "command_input"},
		permission.ModeAutoEdit: {"run_command", "command_input"},
		permission.ModeFullAuto: nil,
	}
	for _, m := range permission.Modes() {
		r := NewRegistry(m.ID, tools())
		var names, ask []string
		for _, tl := range r.Tools() {
			names = append(names, tl.Name())
			if r.Decide(tl) == permission.Ask {
				ask = append(ask, tl.Name())
			}
		}
		if strings.Join(names, ",") != strings.Join(want[m.ID], ",") {
			t.Errorf("%s catalogue = %v, want %v", m.ID, names, want[m.ID])
		}
		if strings.Join(ask, ",") != strings.Join(asks[m.ID], ",") {
			t.Errorf("%s asks for %v, want %v", m.ID, ask, asks[m.ID])
		}
	}
	r := NewRegistry(permission.ModeReadOnly, tools())
	for _, name := range []string{"run_command", "edit_file", "write_file"} {
		_, err := r.Lookup(name)
		if err == nil || !strings.Contains(err.Error(), "not available in read-only mode") || !strings.Contains(err.Error(), "read_file") {
			t.Errorf("Lookup(%s) in read-only = %v", name, err)
		}
	}
	if _, err := NewRegistry(permission.ModeAsk, tools()).Lookup("no_such_tool"); err == nil || !strings.Contains(err.Error(), "ask mode") {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestSchemasCompileAndDescribe(t *testing.T) {
	r := NewRegistry(permission.ModeFullAuto, tools())
	for _, tl := range r.Tools() {
		if _, err := r.schema(tl); err != nil {
			t.Errorf("%s: %v", tl.Name(), err)
		}
		if len(tl.Description()) < 40 {
			t.Errorf("%s: description too short", tl.Name())
		}
	}
}

func TestBadArguments(t *testing.T) {
	env := testEnv(t)
	r := NewRegistry(permission.ModeFullAuto, tools())
	cases := []struct{ tool, input, want string }{
		{"read_file", `{"path": 12}`, "/path"},
		{"read_file", `{}`, "path"},
		{"read_file", `{"path": "a", "offset": 0}`, "/offset"},
		{"read_file", `{"path": "a", "bogus": true}`, "bogus"},
		{"read_file", `not json`, "not valid JSON"},
		{"edit_file", `{"path": "a", "old_string": "x"}`, "new_string"},
		{"run_command", `{"command": ["ls"]}`, "/command"},
		{"run_command", `{"command": "ls", "timeout_seconds": "5"}`, "/timeout_seconds"},
		{"remember", `{"kind": "wish", "text": "x"}`, "/kind"},
		{"grep", `{"pattern": ""}`, "/pattern"},
		{"glob", `[]`, "object"},
	}
	for _, c := range cases {
		tl, err := r.Lookup(c.tool)
		if err != nil {
			t.Fatal(err)
		}
		err = r.Check(tl, json.RawMessage(c.input))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.tool) {
			t.Errorf("Check(%s, %s) = %v, want mention of %q", c.tool, c.input, err, c.want)
		}
		// Calls that skip the check still get an error result, not a panic.
		res := tl.Run(context.Background(), env, json.RawMessage(c.input))
		if !res.IsError || res.Output == "" {
			t.Errorf("Run(%s, %s) = %+v, want an error result", c.tool, c.input, res)
		}
		// Preview may accept what only the schema rejects; it must not panic.
		tl.Preview(context.Background(), env, json.RawMessage(c.input))
	}
	// Runtime checks the schema cannot make.
	for _, c := range []struct{ tool, input, want string }{
		{"grep", `{"pattern": "(unclosed"}`, "not a valid RE2"},
		{"glob", `{"pattern": "[a"}`, "not a valid pattern"},
		{"run_command", `{"command": "true", "timeout_seconds": 100000}`, "over the limit"},
		{"read_artifact", `{"id": "../etc/passwd"}`, "not an artifact id"},
	} {
		res := call(t, byName(c.tool), env, c.input)
		if !res.IsError || !strings.Contains(res.Output, c.want) {
			t.Errorf("%s %s = %q, want %q", c.tool, c.input, res.Output, c.want)
		}
	}
}

// With the checkpoint setting "scan", run_command says why the box does
// not tell what a command changes: the session scans around it instead.
func TestCheckpointSettingChoosesTheWatch(t *testing.T) {
	s, err := config.ParseSandbox([]byte(`{"command": {"checkpoint": "scan"}}`))
	if err != nil || (&RunCommand{Settings: s.Command}).WatchesWrites() == nil {
		t.Fatalf("checkpoint scan: %+v %v", s, err)
	}
}
