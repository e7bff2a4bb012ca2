package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/lsptest"
)

// toolCall is a scripted call of a tool.
func toolCall(name string, input map[string]any) string {
	b, _ := json.Marshal(input)
	return `{"tool_calls": [{"name": "` + name + `", "input": ` + string(b) + `}]}`
}

// ownPackage is a workspace holding a copy of this repository's
// permission package (a module of its own), with a broken file beside
// it, and the copied source's lines.
func ownPackage(t *testing.T) (string, []string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(acptest.Root(), "permission", "permission.go"))
	if err != nil {
		t.Fatal(err)
	}
	ws := acptest.Workspace(t, map[string]string{
		"go.mod":                   "module github.com/bridle-dev/bridle\n\ngo 1.22\n",
		"permission/permission.go": string(src),
		"permission/broken.go":     "package permission\n\nvar alreadyBroken Mode = 42.5\n",
	})
	return ws, strings.Split(string(src), "\n")
}

// lineOf is the line (from 1) of lines holding s, and its column (from 1).
func lineOf(t *testing.T, lines []string, s string) (int, int) {
	t.Helper()
	for i, l := range lines {
		if c := strings.Index(l, s); c >= 0 {
			return i + 1, c + 1
		}
	}
	t.Fatalf("the permission package has no line with %q", s)
	return 0, 0
}

// TestCodeToolsOnOwnCode: through the real binary with gopls, in
// read-only mode (the code tools read), on a copy of this repository's
// permission package: definition, references, hover, symbols (a file's
// outline and a workspace query) and diagnostics answer with the right
// places, as workspace-relative path:line:col and the line's text.
func TestCodeToolsOnOwnCode(t *testing.T) {
	gopls := lsptest.Gopls(t)
	ws, lines := ownPackage(t)
	useLine, _ := lineOf(t, lines, "if !Offered(mode, effect)")
	defLine, defCol := lineOf(t, lines, "func Offered(")
	defCol += len("func ")
	file := "permission/permission.go"
	calls := []string{
		toolCall("definition", map[string]any{"path": file, "line": useLine, "symbol": "Offered"}),
		toolCall("references", map[string]any{"path": file, "line": defLine, "symbol": "Offered"}),
		toolCall("hover", map[string]any{"path": file, "line": useLine, "symbol": "Offered"}),
		toolCall("symbols", map[string]any{"path": file}),
		toolCall("symbols", map[string]any{"query": "ForMode"}),
		toolCall("diagnostics", map[string]any{}),
		// The outline again: from the session's cache, nothing changed.
		toolCall("symbols", map[string]any{"path": file}),
	}
	scenario := `{"turns": [{"calls": [` + strings.Join(calls, ",") + `, {"text": "Done."}]}]}`
	a, sid, _ := lspAgent(t, scenario, `{"lsp": {"wait_seconds": 120}}`, gopls+":"+goDir(t)+":/usr/bin:/bin", ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "read-only"}, nil)
	if stop := a.Prompt(sid, "look"); stop != "end_turn" {
		t.Fatalf("%s\n%s", stop, a.Stderr())
	}
	out := outputs(t, a.DB, sid)
	if len(out) != len(calls) {
		t.Fatalf("results %q", out)
	}
	t.Logf("results:\n%s", strings.Join(out, "\n---\n"))
	def := fmt.Sprintf("%s:%d:%d", file, defLine, defCol)
	forLine, forCol := lineOf(t, lines, "func ForMode(")
	uses := strings.Count(strings.Join(lines, "\n"), "Offered(")
	for i, want := range [][]string{
		{def + " | func Offered(mode Mode, effect Effect) bool {"},
		{def + " | func Offered(", fmt.Sprintf("%s:%d:", file, useLine)},
		{"func Offered(mode Mode, effect Effect) bool"},
		{def + " function Offered", fmt.Sprintf("%s:%d:%d function ForMode", file, forLine, forCol+len("func "))},
		{fmt.Sprintf("%s:%d:%d function github.com/bridle-dev/bridle/permission.ForMode", file, forLine, forCol+len("func "))},
		{"permission/broken.go:3:", "error cannot use 42.5"},
		{def + " function Offered"},
	} {
		for _, w := range want {
			if !strings.Contains(out[i], w) {
				t.Errorf("%s's result lacks %q:\n%s", calls[i], w, out[i])
			}
		}
	}
	if rs := toolResults(t, a.DB, sid); rs[6]["cached"] != true || rs[3]["cached"] == true {
		t.Errorf("the outline asked again was not served from the cache (cached: %v, first: %v)", rs[6]["cached"], rs[3]["cached"])
	}
	if n := strings.Count(out[1], file+":"); n != uses {
		t.Errorf("references lists %d places; the file has %d uses of Offered (with its declaration):\n%s", n, uses, out[1])
	}
	// A bridle that cannot run gopls (the code tools are not offered
	// there) replays the same cards, asking no server.
	if live, replayed := replayedWithoutServers(t, a, sid, ws); len(live) < len(calls) || strings.Join(replayed, "\n") != strings.Join(live, "\n") {
		t.Errorf("the replay shows\n%q\nlive was\n%q", replayed, live)
	}
}

// TestCodeToolsOfferedOnlyWithAServer: a workspace no server serves is
// offered the tools it was offered before; one gopls serves is offered
// the code tools that read, in read-only mode too (not rename).
func TestCodeToolsOfferedOnlyWithAServer(t *testing.T) {
	gopls := lsptest.Gopls(t)
	for _, c := range []struct {
		name, path string
		want       bool
	}{
		{"gopls found", gopls + ":" + goDir(t) + ":/usr/bin:/bin", true},
		{"no server", "/usr/bin:/bin", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := filepath.Join(t.TempDir(), "requests.jsonl")
			cfg, _ := userSettings(t, `{}`)
			_, errs, code := runHeadless(t, []string{cfg, "PATH=" + c.path, "BRIDLE_RECORD_REQUESTS=" + rec, "XDG_CACHE_HOME=" + t.TempDir()}, "",
				"run", "--mode", "read-only", "--db", filepath.Join(t.TempDir(), "b.db"),
				"--model", acptest.Scenario(t, `{"turns":[{"calls":[{"text":"Fine."}]}]}`), "--cwd", goWorkspace(t), "hi")
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"definition", "references", "hover", "symbols", "diagnostics"} {
				if got := strings.Contains(string(b), `"name":"`+name+`"`); got != c.want {
					t.Errorf("tool %s offered: %v, want %v", name, got, c.want)
				}
			}
			if strings.Contains(string(b), `"name":"rename"`) {
				t.Errorf("read-only offers rename, which writes")
			}
		})
	}
}

// TestCommandReportsWhatItBroke: a command that changes a source file
// ends its result with the diagnostics its change introduced (gopls has
// main.go open from an edit; the command changes util.go, which breaks
// main.go's call); a command that mends it says nothing new is wrong.
func TestCommandReportsWhatItBroke(t *testing.T) {
	gopls := lsptest.Gopls(t)
	ws := goWorkspace(t)
	breakIt := `sed -i 's/a, b int) int/a, b string) string/' util.go`
	mendIt := `sed -i 's/a, b string) string/a, b int) int/' util.go`
	scenario := `{"turns": [{"calls": [` + editCall("main.go", "add(1, 2))", "add(1, 2)) // sum") + `,
		` + toolCall("run_command", map[string]any{"command": breakIt}) + `,
		` + toolCall("run_command", map[string]any{"command": mendIt}) + `, {"text": "Done."}]}]}`
	a, sid, _ := lspAgent(t, scenario, `{"lsp": {"wait_seconds": 120}}`, gopls+":"+goDir(t)+":/usr/bin:/bin", ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "go"); stop != "end_turn" {
		t.Fatalf("%s\n%s", stop, a.Stderr())
	}
	out := outputs(t, a.DB, sid)
	if len(out) != 3 {
		t.Fatalf("results %q", out)
	}
	t.Logf("the breaking command:\n%s\nthe mending one:\n%s", out[1], out[2])
	for _, want := range []string{"gopls: 2 new problems after this command:",
		"main.go:6:18 error cannot use 1 (untyped int constant) as string value in argument to add",
		"main.go:6:21 error cannot use 2 (untyped int constant) as string value in argument to add"} {
		if !strings.Contains(out[1], want) {
			t.Errorf("the breaking command's result does not say %q:\n%s", want, out[1])
		}
	}
	if !strings.Contains(out[2], "gopls: no new problems after this command (1 open file checked).") {
		t.Errorf("the mending command's result does not say nothing new is wrong:\n%s", out[2])
	}
}

// TestRenameThroughApprovalAndRewind: through the real binary with
// gopls, in ask mode: rename's one permission request shows the whole
// diff (both files it changes), the files are renamed after the answer,
// and /rewind puts both back.
func TestRenameThroughApprovalAndRewind(t *testing.T) {
	gopls := lsptest.Gopls(t)
	ws := goWorkspace(t)
	orig := map[string]string{}
	for _, f := range []string{"main.go", "util.go"} {
		b, _ := os.ReadFile(filepath.Join(ws, f))
		orig[f] = string(b)
	}
	scenario := `{"turns": [{"match": "rename", "calls": [` +
		toolCall("rename", map[string]any{"path": "util.go", "line": 3, "symbol": "add", "new_name": "sum"}) + `, {"text": "Renamed."}]}]}`
	a, sid, _ := lspAgent(t, scenario, `{"lsp": {"wait_seconds": 120}}`, gopls+":"+goDir(t)+":/usr/bin:/bin", ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	an := &answerer{answers: []string{"allow_once"}}
	a.OnRequest = an.handle
	if stop := a.Prompt(sid, "rename add"); stop != "end_turn" {
		t.Fatalf("%s\n%s", stop, a.Stderr())
	}
	if an.count() != 1 {
		t.Fatalf("%d permission requests, want 1", an.count())
	}
	// The one question shows both files' diffs.
	content, _ := an.asked[0]["toolCall"].(map[string]any)["content"].([]any)
	diffs := map[string]string{}
	for _, c := range content {
		m, _ := c.(map[string]any)
		if m["type"] == "diff" {
			p, _ := m["path"].(string)
			n, _ := m["newText"].(string)
			diffs[filepath.Base(p)] = n
		}
	}
	if !strings.Contains(diffs["util.go"], "func sum(a, b int) int") || !strings.Contains(diffs["main.go"], "fmt.Println(sum(1, 2))") || len(diffs) != 2 {
		t.Fatalf("the permission request's diffs: %q", diffs)
	}
	out := outputs(t, a.DB, sid)
	t.Logf("rename's result:\n%s", out[0])
	if !strings.Contains(out[0], "Renamed add to sum: 2 edits in 2 files.") || !strings.Contains(out[0], "gopls: no new problems after this edit") {
		t.Errorf("rename's result:\n%s", out[0])
	}
	for f, want := range map[string]string{"main.go": "fmt.Println(sum(1, 2))", "util.go": "func sum(a, b int) int"} {
		if b, _ := os.ReadFile(filepath.Join(ws, f)); !strings.Contains(string(b), want) {
			t.Errorf("%s after the rename:\n%s", f, b)
		}
	}
	if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
		t.Fatalf("/rewind 1: %s", stop)
	}
	for f, want := range orig {
		if b, _ := os.ReadFile(filepath.Join(ws, f)); string(b) != want {
			t.Errorf("%s after /rewind 1:\n%s\nwant\n%s", f, b, want)
		}
	}
}

// TestRenameOutsideTheWorkspaceIsRefused: a server whose rename would
// also change a file outside the workspace, or a hidden one, has the
// whole rename refused: nothing is asked, nothing is written.
func TestRenameOutsideTheWorkspaceIsRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "victim.src")
	os.WriteFile(outside, []byte("ok\n"), 0o644)
	for _, c := range []struct{ name, target string }{
		{"outside", outside},
		{"hidden", "secret/b.src"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := acptest.Workspace(t, map[string]string{"a.src": "ok\n", "secret/b.src": "ok\n"})
			target := c.target
			if !filepath.IsAbs(target) {
				target = filepath.Join(ws, target)
			}
			var settings map[string]any
			json.Unmarshal([]byte(fakeServerSettings(t, 60, nil, "-rename-also", target)), &settings)
			settings["sandbox"] = map[string]any{"command": map[string]any{"hidden_paths": []string{filepath.Join(ws, "secret")}}}
			raw, _ := json.Marshal(settings)
			scenario := `{"turns": [{"calls": [` + toolCall("rename", map[string]any{"path": "a.src", "line": 1, "symbol": "ok", "new_name": "x"}) + `, {"text": "Done."}]}]}`
			a, sid, _ := lspAgent(t, scenario, string(raw), "/usr/bin:/bin", ws)
			an := &answerer{}
			a.OnRequest = an.handle
			a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
			if stop := a.Prompt(sid, "rename"); stop != "end_turn" {
				t.Fatalf("%s\n%s", stop, a.Stderr())
			}
			out := outputs(t, a.DB, sid)
			if len(out) != 1 || !strings.Contains(out[0], "outside the workspace or hidden; nothing was changed") {
				t.Errorf("results %q", out)
			}
			if an.count() != 0 {
				t.Errorf("a refused rename was put to the user")
			}
			for _, f := range []string{filepath.Join(ws, "a.src"), target} {
				if b, _ := os.ReadFile(f); string(b) != "ok\n" {
					t.Errorf("%s was changed: %q", f, b)
				}
			}
		})
	}
}

// TestRenameChangedWhileAskedIsRefused: in ask mode, the user is shown a
// rename's diff (a.src: "xok"); while they answer, a.src changes on disk
// (the user, or a command). The approved rename is refused, nothing is
// written, and the model is told to ask again. Before, bridle asked the
// server again and wrote its new answer, a diff the user never saw.
func TestRenameChangedWhileAskedIsRefused(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"a.src": "ok\n"})
	scenario := `{"turns": [{"calls": [` + toolCall("rename", map[string]any{"path": "a.src", "line": 1, "symbol": "ok", "new_name": "x"}) + `, {"text": "Done."}]}]}`
	a, sid, _ := lspAgent(t, scenario, fakeServerSettings(t, 60, nil), "/usr/bin:/bin", ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	const changed = "ok\nchanged while the user was asked\n"
	an := &answerer{answers: []string{"allow_once"}}
	a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		if err := os.WriteFile(filepath.Join(ws, "a.src"), []byte(changed), 0o644); err != nil {
			t.Error(err)
		}
		return an.handle(m)
	}
	if stop := a.Prompt(sid, "rename"); stop != "end_turn" {
		t.Fatalf("%s\n%s", stop, a.Stderr())
	}
	if an.count() != 1 {
		t.Fatalf("%d permission requests, want 1", an.count())
	}
	out := outputs(t, a.DB, sid)
	if len(out) != 1 || !strings.Contains(out[0], "rename: a.src changed since the rename was planned (on disk); nothing was changed: ask for the rename again") {
		t.Errorf("the rename's result: %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.src")); string(b) != changed {
		t.Errorf("a.src holds %q, want %q: a rename the user did not see was written", b, changed)
	}
	a.AssertValid(t)
}
