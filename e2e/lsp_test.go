package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/lsptest"
)

// editCall is a scripted edit_file call.
func editCall(path, old, new string) string {
	b, _ := json.Marshal(map[string]any{"path": path, "old_string": old, "new_string": new})
	return `{"tool_calls": [{"name": "edit_file", "input": ` + string(b) + `}]}`
}

// goDir is the directory of the go command, which gopls runs.
func goDir(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed on PATH for gopls")
	}
	return filepath.Dir(p)
}

// goWorkspace is a module whose other.go is broken already.
func goWorkspace(t *testing.T) string {
	return acptest.Workspace(t, map[string]string{
		"go.mod":   "module example.com/demo\n\ngo 1.22\n",
		"main.go":  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(add(1, 2))\n}\n",
		"util.go":  "package main\n\nfunc add(a, b int) int { return a + b }\n",
		"other.go": "package main\n\nvar alreadyBroken int = \"not a number\"\n",
	})
}

// lspAgent starts bridle playing scenario with the user's settings and
// PATH given, in auto-edit, with a session in ws.
func lspAgent(t *testing.T, scenario, settings, path, ws string) (*acptest.Agent, string, string) {
	t.Helper()
	cfg, _ := userSettings(t, settings)
	cache := t.TempDir()
	// The data directory too: a trusted project's settings are recorded
	// there (bridle trust), not in the machine's.
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), Env: []string{cfg, "PATH=" + path, "XDG_CACHE_HOME=" + cache, "XDG_DATA_HOME=" + t.TempDir()}})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
	return a, sid, cache
}

// outputs are the outputs of a session's tool results, in order.
func outputs(t testing.TB, db, sid string) []string {
	t.Helper()
	var out []string
	for _, r := range toolResults(t, db, sid) {
		s, _ := r["output"].(string)
		out = append(out, s)
	}
	return out
}

// TestGoplsReportsWhatAnEditBroke: through the real binary with gopls
// (pinned, installed by make test): an edit that introduces a type error
// reports it in the same tool result, and not the error another file had
// already; fixing it reports none new; session/load in a bridle without
// gopls replays the same text, asking no server.
func TestGoplsReportsWhatAnEditBroke(t *testing.T) {
	gopls := lsptest.Gopls(t)
	ws := goWorkspace(t)
	scenario := `{"turns": [
		{"match": "break", "calls": [` + editCall("main.go", "add(1, 2)", `add(1, "two")`) + `, {"text": "Broken."}]},
		{"match": "fix", "calls": [` + editCall("main.go", `add(1, "two")`, "add(1, 2)") + `, {"text": "Fixed."}]}
	]}`
	a, sid, _ := lspAgent(t, scenario, `{"lsp": {"wait_seconds": 120}}`, gopls+":"+goDir(t)+":/usr/bin:/bin", ws)
	if stop := a.Prompt(sid, "break it"); stop != "end_turn" {
		t.Fatalf("break: %s\n%s", stop, a.Stderr())
	}
	if stop := a.Prompt(sid, "fix it"); stop != "end_turn" {
		t.Fatalf("fix: %s", stop)
	}
	out := outputs(t, a.DB, sid)
	if len(out) != 2 {
		t.Fatalf("tool results %q", out)
	}
	broke, fixed := out[0], out[1]
	t.Logf("broke:\n%s\nfixed:\n%s", broke, fixed)
	for _, want := range []string{"gopls: 1 new problem after this edit:", `main.go:6:21 error cannot use "two" (untyped string constant) as int value in argument to add`} {
		if !strings.Contains(broke, want) {
			t.Errorf("the breaking edit's result does not say %q:\n%s", want, broke)
		}
	}
	if strings.Contains(broke, "alreadyBroken") || strings.Contains(broke, "other.go") {
		t.Errorf("the breaking edit's result repeats another file's error:\n%s", broke)
	}
	if !strings.Contains(fixed, "gopls: no new problems after this edit.") {
		t.Errorf("the fix's result does not say nothing new is wrong:\n%s", fixed)
	}
	// A bridle that cannot run gopls replays the same results.
	live, replayed := replayedWithoutServers(t, a, sid, ws)
	if strings.Join(replayed, "\n") != strings.Join(live, "\n") || !strings.Contains(strings.Join(replayed, "\n"), "gopls: 1 new problem") {
		t.Errorf("the replay shows\n%q\nlive was\n%q", replayed, live)
	}
}

// replayedWithoutServers ends a, then loads session sid in a bridle
// whose PATH has no language server, and returns the texts of the tool
// call updates each was sent (callTexts): the live ones and the replayed.
func replayedWithoutServers(t *testing.T, a *acptest.Agent, sid, ws string) (live, replayed []string) {
	t.Helper()
	live = callTexts(a, sid)
	if a.CloseStdin() != 0 {
		t.Fatalf("bridle did not exit cleanly:\n%s", a.Stderr())
	}
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: "scripted/demo", Env: []string{"PATH=/usr/bin:/bin"}})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	return live, callTexts(b, sid)
}

// callTexts are the texts of the tool call updates the editor was sent
// for a session, in order.
func callTexts(a *acptest.Agent, sid string) []string {
	var out []string
	for _, u := range a.Updates(sid) {
		if u.Kind != "tool_call_update" {
			continue
		}
		content, _ := u.Fields["content"].([]any)
		for _, c := range content {
			m, _ := c.(map[string]any)
			if inner, ok := m["content"].(map[string]any); ok {
				if text, ok := inner["text"].(string); ok {
					out = append(out, text)
				}
			}
		}
	}
	return out
}

// TestNoServerCostsNothing: with no server on PATH an edit's result is
// what it always was, and nothing was set up for a server.
func TestNoLanguageServerCostsNothing(t *testing.T) {
	ws := goWorkspace(t)
	scenario := `{"turns": [{"calls": [` + editCall("main.go", "add(1, 2)", `add(1, "two")`) + `, {"text": "Done."}]}]}`
	a, sid, cache := lspAgent(t, scenario, `{}`, "/usr/bin:/bin", ws)
	a.Prompt(sid, "edit")
	out := outputs(t, a.DB, sid)
	if len(out) != 1 || !strings.HasPrefix(out[0], "Edited main.go: 1 replacement(s).") || strings.Contains(out[0], "gopls") {
		t.Fatalf("results %q", out)
	}
	if _, err := os.Stat(filepath.Join(cache, "bridle", "lsp")); err == nil {
		t.Errorf("a language server's cache was made with no server found")
	}
}

// TestDiskChangesReachGopls: a command that changes a file on disk (not
// through bridle's edits) reaches gopls through the workspace's watcher:
// the next edit's result knows what it broke.
func TestDiskChangesReachGopls(t *testing.T) {
	gopls := lsptest.Gopls(t)
	ws := goWorkspace(t)
	sed := `sed -i 's/a, b int) int/a, b string) string/' util.go`
	scenario := `{"turns": [{"calls": [` + editCall("main.go", "add(1, 2))", "add(1, 2)) // sum") + `,
		{"tool_calls": [{"name": "run_command", "input": {"command": "` + sed + `"}}]},
		` + editCall("main.go", "// sum", "// total") + `, {"text": "Done."}]}]}`
	a, sid, _ := lspAgent(t, scenario, `{"lsp": {"wait_seconds": 120}}`, gopls+":"+goDir(t)+":/usr/bin:/bin", ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "go"); stop != "end_turn" {
		t.Fatalf("%s\n%s", stop, a.Stderr())
	}
	out := outputs(t, a.DB, sid)
	if len(out) != 3 {
		t.Fatalf("results %q", out)
	}
	t.Logf("after the command:\n%s", out[2])
	if !strings.Contains(out[2], "main.go:6:18 error cannot use 1 (untyped int constant) as string value in argument to add") &&
		!strings.Contains(out[2], "(2 in main.go from before, not repeated)") {
		t.Errorf("the edit after the command does not know what the command broke:\n%s", out[2])
	}
}
