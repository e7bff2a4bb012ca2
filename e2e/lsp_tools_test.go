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
	} {
		for _, w := range want {
			if !strings.Contains(out[i], w) {
				t.Errorf("%s's result lacks %q:\n%s", calls[i], w, out[i])
			}
		}
	}
	if n := strings.Count(out[1], file+":"); n != uses {
		t.Errorf("references lists %d places; the file has %d uses of Offered (with its declaration):\n%s", n, uses, out[1])
	}
}

// TestCodeToolsOfferedOnlyWithAServer: a workspace no server serves is
// offered the tools it was offered before; one gopls serves is offered
// the code tools, in read-only mode too.
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
