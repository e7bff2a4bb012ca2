package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// typescriptServer returns the directory holding the pinned
// typescript-language-server (e2e/lspnode, installed by make test), and
// node's, failing the test with how to install them when missing.
func typescriptServer(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(acptest.Root(), "e2e", "lspnode", "node_modules", ".bin")
	if _, err := exec.LookPath(filepath.Join(dir, "typescript-language-server")); err != nil {
		t.Fatalf("this test runs typescript-language-server from %s, which is not there (%v): run `make tools` (scripts/ensure-test-tools), or npm ci in e2e/lspnode", dir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is needed on PATH for typescript-language-server")
	}
	return dir + ":" + filepath.Dir(node)
}

// TestTypeScriptServerInTheBox: through the real binary with
// typescript-language-server (Node, under the box's limits): an edit that
// introduces a type error reports it in the same result, and the code
// tools answer.
func TestTypeScriptServerInTheBox(t *testing.T) {
	path := typescriptServer(t) + ":/usr/bin:/bin"
	ws := acptest.Workspace(t, map[string]string{
		"tsconfig.json": `{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}, "include": ["*.ts"]}` + "\n",
		"util.ts":       "export function add(a: number, b: number): number {\n  return a + b;\n}\n",
		"main.ts":       "import { add } from \"./util\";\n\nconst total: number = add(1, 2);\nconsole.log(total);\n",
	})
	scenario := `{"turns": [{"calls": [` + editCall("main.ts", "add(1, 2)", `add(1, "two")`) + `,
		` + toolCall("definition", map[string]any{"path": "main.ts", "line": 3, "symbol": "add"}) + `, {"text": "Done."}]}]}`
	a, sid, _ := lspAgent(t, scenario, `{"lsp": {"wait_seconds": 120}}`, path, ws)
	if stop := a.Prompt(sid, "go"); stop != "end_turn" {
		t.Fatalf("%s\n%s", stop, a.Stderr())
	}
	out := outputs(t, a.DB, sid)
	if len(out) != 2 {
		t.Fatalf("results %q\n%s", out, a.Stderr())
	}
	t.Logf("the edit:\n%s\ndefinition:\n%s", out[0], out[1])
	for _, want := range []string{"typescript-language-server: 1 new problem after this edit:",
		`main.ts:3:30 error Argument of type 'string' is not assignable to parameter of type 'number'.`} {
		if !strings.Contains(out[0], want) {
			t.Errorf("the edit's result does not say %q:\n%s\n%s", want, out[0], a.Stderr())
		}
	}
	if !strings.Contains(out[1], "util.ts:1:17 | export function add(a: number, b: number): number {") {
		t.Errorf("definition:\n%s", out[1])
	}
}
