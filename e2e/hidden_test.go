package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// Markers of what bridle hides, assembled at run time so that this file
// never matches a search for them.
var (
	artifactMark = "ARTMARK" + "-93d0"
	settingsMark = "SETMARK" + "-93d0"
	sshMark      = "SSHMARK" + "-93d0"
	promptMark   = "PROMPTMARK" + "-93d0"
	noteMark     = "NOTEMARK" + "-93d0"
	hiddenMarks  = []string{artifactMark, settingsMark, sshMark, promptMark}
)

// hiddenHome is a home directory holding bridle's settings (with a marker
// in a setting the model never sees), another session's artifact in
// bridle's data directory, an SSH key and an ordinary file.
func hiddenHome(t *testing.T) (home, settings string) {
	t.Helper()
	settings = `{"sandbox": {"command": {"env_allow": ["` + settingsMark + `"]}}}` + "\n"
	home = acptest.Workspace(t, map[string]string{
		".config/bridle/settings.json":                        settings,
		".local/share/bridle/artifacts/other/a3.0.txt":        "another session's output: " + artifactMark + "\n",
		".ssh/id_ed25519":                                     sshMark + "\n",
		"notes.txt":                                           "ordinary: " + noteMark + "\n",
		".local/share/bridle/artifacts/other/unrelated/x.txt": "x\n",
	})
	return home, settings
}

// startAtHome runs bridle with $HOME at home and the XDG variables unset,
// so its settings, database and cache are in their default places under
// home, and opens a session in cwd; it fails the test if bridle asks for
// a permission.
func startAtHome(t *testing.T, home, scenario, cwd string) (*acptest.Agent, string) {
	t.Helper()
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), DefaultDB: true, Home: home})
	if want := filepath.Join(home, ".local", "share", "bridle", "bridle.db"); a.DB != want {
		t.Fatalf("database at %s, want %s", a.DB, want)
	}
	var mu sync.Mutex
	a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		mu.Lock()
		defer mu.Unlock()
		t.Errorf("bridle asked %s: %s", m.Method, m.Params)
		return nil, &acptest.RPCError{Code: -32601, Message: "not expected"}
	}
	a.Initialize()
	// The database opens while initialize is answered: a session is what
	// waits for it.
	sid := a.NewSession(cwd)
	if _, err := os.Stat(a.DB); err != nil {
		t.Fatalf("bridle did not open its default database: %v", err)
	}
	return a, sid
}

// results returns the tool results of a session's log, in order.
func results(t *testing.T, db, sid string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range acptest.Log(t, db, sid) {
		if e["kind"] == "tool_result" {
			p, _ := e["payload"].(map[string]any)
			out = append(out, p)
		}
	}
	return out
}

// noMarks fails the test if anything bridle sent the editor holds a
// marker of a hidden file.
func noMarks(t *testing.T, a *acptest.Agent) {
	t.Helper()
	var sent bytes.Buffer
	for _, s := range a.Sent() {
		sent.Write(s.Raw)
	}
	for _, m := range []string{artifactMark, settingsMark, sshMark} {
		if bytes.Contains(sent.Bytes(), []byte(m)) {
			t.Errorf("bridle sent the editor the hidden %s", m)
		}
	}
}

// TestHiddenPathsAtHome opens a session at $HOME, where bridle keeps its
// settings, its database and its artifacts, and the user an SSH key: in
// auto-edit mode, the model's write to bridle's settings (which would
// widen the next session's box), its reads of the database and of the
// key, and a search over the whole workspace for what only another
// session's artifact and the settings hold are all refused or come back
// empty, and the settings file is unchanged.
func TestHiddenPathsAtHome(t *testing.T) {
	home, settings := hiddenHome(t)
	pattern := "(ART|SET|SSH|PROMPT|NOTE)MARK-[0-9a-f]+"
	scenario, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"calls": []any{
		map[string]any{"text": "Looking around.", "tool_calls": []any{
			map[string]any{"name": "write_file", "input": map[string]any{"path": ".config/bridle/settings.json",
				"content": `{"sandbox": {"command": {"allow_hosts": ["*"], "visible_paths": ["~/.ssh"]}}}`}},
			map[string]any{"name": "read_file", "input": map[string]any{"path": ".local/share/bridle/bridle.db"}},
			map[string]any{"name": "grep", "input": map[string]any{"pattern": pattern}},
			map[string]any{"name": "read_file", "input": map[string]any{"path": ".ssh/id_ed25519"}},
			map[string]any{"name": "list_dir", "input": map[string]any{"path": ".local/share/bridle/artifacts"}},
			map[string]any{"name": "glob", "input": map[string]any{"pattern": "**/a3.0.txt"}},
		}},
		map[string]any{"text": "Done."},
	}}}})
	a, sid := startAtHome(t, home, string(scenario), home)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
	if stop := a.Prompt(sid, "tidy up my settings "+promptMark); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	a.CloseStdin()

	res := results(t, a.DB, sid)
	if len(res) != 6 {
		t.Fatalf("%d tool results, want 6: %v", len(res), res)
	}
	for i, want := range []string{
		".config/bridle/settings.json is bridle's own file (" + filepath.Join(home, ".config", "bridle") + ": its settings, database, artifacts or cache), hidden from the agent",
		".local/share/bridle/bridle.db is bridle's own file (" + filepath.Join(home, ".local", "share", "bridle"),
		"", // grep
		".ssh/id_ed25519 is a credential store (" + filepath.Join(home, ".ssh") + "), hidden from the agent: no tool may read or write it; the user's settings sandbox.command.visible_paths can make a credential store visible",
		".local/share/bridle/artifacts is bridle's own file",
		"", // glob
	} {
		out, _ := res[i]["output"].(string)
		for _, m := range hiddenMarks {
			if strings.Contains(out, m) {
				t.Errorf("%s result holds the hidden %s: %q", res[i]["name"], m, out)
			}
		}
		if want == "" {
			continue
		}
		if res[i]["is_error"] != true || !strings.Contains(out, want) {
			t.Errorf("%s: %q, want an error with %q", res[i]["name"], out, want)
		}
	}
	// The search found the ordinary file, and nothing of the hidden ones.
	if out, _ := res[2]["output"].(string); !strings.HasPrefix(out, "1 match in 1 files") || !strings.Contains(out, "notes.txt:1:ordinary: "+noteMark) {
		t.Errorf("grep: %q", out)
	}
	if out, _ := res[5]["output"].(string); !strings.Contains(out, "[no files match") {
		t.Errorf("glob: %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".config", "bridle", "settings.json")); string(b) != settings {
		t.Errorf("bridle's settings changed: %q", b)
	}
	noMarks(t, a)
}

// TestHiddenPathsAtRoot opens a session at /, the whole file system: the
// database and the settings, named by their absolute paths, are refused,
// and an ordinary file is read. (Nothing here walks /.)
func TestHiddenPathsAtRoot(t *testing.T) {
	home, settings := hiddenHome(t)
	db := filepath.Join(home, ".local", "share", "bridle", "bridle.db")
	settingsPath := filepath.Join(home, ".config", "bridle", "settings.json")
	scenario, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"calls": []any{
		map[string]any{"text": "Reading.", "tool_calls": []any{
			map[string]any{"name": "read_file", "input": map[string]any{"path": db}},
			map[string]any{"name": "read_file", "input": map[string]any{"path": settingsPath}},
			map[string]any{"name": "read_file", "input": map[string]any{"path": strings.TrimPrefix(filepath.Join(home, ".local", "share", "bridle", "artifacts", "other", "a3.0.txt"), "/")}},
			map[string]any{"name": "read_file", "input": map[string]any{"path": filepath.Join(home, "notes.txt")}},
		}},
		map[string]any{"text": "Done."},
	}}}})
	a, sid := startAtHome(t, home, string(scenario), "/")
	if stop := a.Prompt(sid, "read bridle's files "+promptMark); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	a.CloseStdin()

	res := results(t, a.DB, sid)
	if len(res) != 4 {
		t.Fatalf("%d tool results, want 4: %v", len(res), res)
	}
	for i := range 3 {
		out, _ := res[i]["output"].(string)
		if res[i]["is_error"] != true || !strings.Contains(out, "is bridle's own file") || !strings.Contains(out, "hidden from the agent") {
			t.Errorf("read_file %d: %q, want it refused as bridle's own file", i, out)
		}
	}
	if out, _ := res[3]["output"].(string); res[3]["is_error"] == true || !strings.Contains(out, noteMark) {
		t.Errorf("read_file of an ordinary file at /: %q", out)
	}
	if b, _ := os.ReadFile(settingsPath); string(b) != settings {
		t.Errorf("bridle's settings changed: %q", b)
	}
	noMarks(t, a)
}
