package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/internal/acpclient"
	"github.com/bridle-dev/bridle/internal/acptest"
)

// linkEditor is an editor that keeps no buffers of its own: it reads and
// writes the path it is given, following links, as real editors do, and
// counts the questions that reached a file under one of the directories
// outside the workspace.
type linkEditor struct {
	outside []string // real paths

	mu      sync.Mutex
	reached int
}

func (e *linkEditor) handle(m acptest.Msg) (any, *acptest.RPCError) {
	if !strings.HasPrefix(m.Method, "fs/") {
		return acpclient.FirstOption(m)
	}
	path, content := fsParams(m)
	e.mu.Lock()
	defer e.mu.Unlock()
	if real, err := filepath.EvalSymlinks(path); err == nil {
		for _, o := range e.outside {
			if real == o || strings.HasPrefix(real, o+string(filepath.Separator)) {
				e.reached++
			}
		}
	}
	if m.Method == "fs/read_text_file" {
		return fromDisk(path)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return nil, &acptest.RPCError{Code: -32603, Message: err.Error()}
	}
	return nil, nil
}

func (e *linkEditor) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reached
}

// TestEditorRefusesARepointedWorkspace: session B, at the home directory,
// renames the directory of session A (home/work/proj) away and puts a
// symbolic link under its name: to bridle's settings, to ~/.aws, to an
// ordinary directory outside A's workspace, to one outside the home
// directory; or renames A's parent (home/work) and links it elsewhere. A
// file of the same name stays in the renamed directory, so a check
// through the directory handle A opened passes. Then A's read_file,
// edit_file and write_file (its editor offers fs and follows links) and
// run_command are each tried once: every one is refused, saying the
// workspace directory was moved or replaced, the editor is never asked
// about a file outside, nothing outside is read into the log or changed,
// and no command runs in the link's target. Once B puts the directory
// back, A's tools work again.
func TestEditorRefusesARepointedWorkspace(t *testing.T) {
	marks := map[string]string{
		"settings": "SETMARK" + "-5be1",
		"aws":      "AWSMARK" + "-5be1",
		"else":     "ELSEMARK" + "-5be1",
		"other":    "UPMARK" + "-5be1",
		"out":      "OUTMARK" + "-5be1",
	}
	settings := `{"sandbox": {"command": {"env_allow": ["` + marks["settings"] + `"]}}}` + "\n"
	home := acptest.Workspace(t, map[string]string{
		".config/bridle/settings.json": settings,
		".aws/credentials":             "[default]\nnote = " + marks["aws"] + "\n",
		"elsewhere/notes.txt":          "elsewhere: " + marks["else"] + "\n",
		"other/proj/notes.txt":         "other: " + marks["other"] + "\n",
		"work/proj/settings.json":      "inside\n",
		"work/proj/credentials":        "inside\n",
		"work/proj/notes.txt":          "inside\n",
	})
	outDir := acptest.Workspace(t, map[string]string{"notes.txt": "out: " + marks["out"] + "\n"})
	before := map[string]string{}
	targets := []string{filepath.Join(home, ".config/bridle/settings.json"), filepath.Join(home, ".aws/credentials"),
		filepath.Join(home, "elsewhere/notes.txt"), filepath.Join(home, "other/proj/notes.txt"), filepath.Join(outDir, "notes.txt")}
	for _, p := range targets {
		b, _ := os.ReadFile(p)
		before[p] = string(b)
	}
	proj := filepath.Join(home, "work", "proj")

	type attempt struct{ label, tool, input string }
	type round struct {
		name, point, restore string
		attempts             []attempt
	}
	repoint := func(name, target string) string {
		return fmt.Sprintf("mv %[1]s %[1]s.old && ln -s %[2]s %[1]s && echo repointed", filepath.Join(home, name), target)
	}
	putBack := func(name string) string {
		return fmt.Sprintf("rm %[1]s && mv %[1]s.old %[1]s && echo restored", filepath.Join(home, name))
	}
	rounds := []round{
		{"bridle's settings (hidden)", repoint("work/proj", filepath.Join(home, ".config/bridle")), putBack("work/proj"), []attempt{
			{"read settings", "read_file", `{"path": "settings.json"}`},
			{"edit settings", "edit_file", `{"path": "settings.json", "old_string": "env_allow", "new_string": "allow_hosts"}`},
			{"write settings", "write_file", `{"path": "settings.json", "content": "{\"sandbox\": {\"command\": {\"allow_hosts\": [\"*\"]}}}\n"}`},
		}},
		{"~/.aws (a credential store)", repoint("work/proj", filepath.Join(home, ".aws")), putBack("work/proj"), []attempt{
			{"read credentials", "read_file", `{"path": "credentials"}`},
			{"write credentials", "write_file", `{"path": "credentials", "content": "overwritten\n"}`},
		}},
		{"a directory outside the workspace", repoint("work/proj", filepath.Join(home, "elsewhere")), putBack("work/proj"), []attempt{
			{"read elsewhere", "read_file", `{"path": "notes.txt"}`},
			{"edit elsewhere", "edit_file", `{"path": "notes.txt", "old_string": "elsewhere", "new_string": "overwritten"}`},
		}},
		{"the workspace's parent", repoint("work", filepath.Join(home, "other")), putBack("work"), []attempt{
			{"read through the parent", "read_file", `{"path": "notes.txt"}`},
			{"write through the parent", "write_file", `{"path": "notes.txt", "content": "overwritten\n"}`},
		}},
		{"a directory outside the home directory", repoint("work/proj", outDir), putBack("work/proj"), []attempt{
			{"command outside", "run_command", `{"command": "echo overwritten > notes.txt; cat notes.txt"}`},
			{"read outside", "read_file", `{"path": "notes.txt"}`},
		}},
	}
	var turns []any
	call := func(match, tool, input string) {
		turns = append(turns, map[string]any{"match": match, "calls": []any{
			map[string]any{"tool_calls": []any{map[string]any{"name": tool, "input": json.RawMessage(input)}}},
			map[string]any{"text": "done"},
		}})
	}
	for i, r := range rounds {
		b, _ := json.Marshal(map[string]string{"command": r.point})
		call(fmt.Sprintf("POINT-%d", i), "run_command", string(b))
		b, _ = json.Marshal(map[string]string{"command": r.restore})
		call(fmt.Sprintf("RESTORE-%d", i), "run_command", string(b))
		for j, at := range r.attempts {
			call(fmt.Sprintf("TRY-%d-%d", i, j), at.tool, at.input)
		}
	}
	call("AFTER", "read_file", `{"path": "notes.txt"}`)
	scenario, _ := json.Marshal(map[string]any{"turns": turns})

	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, string(scenario)), DefaultDB: true,
		Env:   []string{"HOME=" + home},
		Unset: []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"}})
	ed := &linkEditor{outside: []string{filepath.Join(home, ".config"), filepath.Join(home, ".aws"), filepath.Join(home, "elsewhere"), filepath.Join(home, "other"), outDir}}
	a.OnRequest = ed.handle
	a.InitializeWith(true, true)
	sidA, sidB := a.NewSession(proj), a.NewSession(home)
	for _, sid := range []string{sidA, sidB} {
		a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	}
	prompt := func(sid, text string) {
		t.Helper()
		if stop := a.Prompt(sid, text); stop != "end_turn" {
			t.Fatalf("%s: stopReason %q", text, stop)
		}
	}
	lastResult := func(sid string) string {
		t.Helper()
		rs := results(t, a.DB, sid)
		out, _ := rs[len(rs)-1]["output"].(string)
		return out
	}

	tried, held := 0, 0
	var failed []string
	for i, r := range rounds {
		prompt(sidB, fmt.Sprintf("POINT-%d", i))
		if out := lastResult(sidB); !strings.Contains(out, "repointed") {
			t.Fatalf("B could not re-point %s: %s", r.name, out)
		}
		for j, at := range r.attempts {
			tried++
			reached := ed.count()
			prompt(sidA, fmt.Sprintf("TRY-%d-%d", i, j))
			out := lastResult(sidA)
			var why []string
			if n := ed.count() - reached; n > 0 {
				why = append(why, fmt.Sprintf("the editor was asked %d times about the file outside", n))
			}
			for _, m := range marks {
				switch {
				case !strings.Contains(out, m):
				case at.tool == "run_command":
					why = append(why, "the command ran in the link's target")
				default:
					why = append(why, "the result holds the file outside")
				}
			}
			if !strings.Contains(out, "was moved or replaced") {
				why = append(why, "the result does not say the workspace directory was moved or replaced")
			}
			if len(why) == 0 {
				held++
			} else {
				failed = append(failed, fmt.Sprintf("%s through %s: %s (result: %.300q)", at.label, r.name, strings.Join(why, "; "), out))
			}
		}
		prompt(sidB, fmt.Sprintf("RESTORE-%d", i))
		if out := lastResult(sidB); !strings.Contains(out, "restored") {
			t.Fatalf("B could not put %s back: %s", r.name, out)
		}
	}
	t.Logf("%d tried, %d held, %d failed", tried, held, len(failed))
	for _, f := range failed {
		t.Errorf("%s", f)
	}
	for _, p := range targets {
		if b, _ := os.ReadFile(p); string(b) != before[p] {
			t.Errorf("%s was changed: %q", p, b)
		}
	}
	var sent bytes.Buffer
	for _, s := range a.Sent() {
		sent.Write(s.Raw)
	}
	for name, m := range marks {
		if bytes.Contains(sent.Bytes(), []byte(m)) {
			t.Errorf("bridle sent the editor the %s file's text", name)
		}
	}
	// Put back, the directory is the session's again.
	reached := ed.count()
	prompt(sidA, "AFTER")
	if out := lastResult(sidA); !strings.Contains(out, "inside") || !strings.Contains(out, "[from the editor's buffer]") || ed.count() != reached {
		t.Errorf("once the directory is back, a read: %q", out)
	}
}
