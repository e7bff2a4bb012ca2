package e2e

import (
	"bufio"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(acptest.Root(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsReadOnlyTools: docs/sandbox.md's read-only row lists exactly
// the tools the binary offers the model in read-only mode (what the
// request sent to the model holds).
func TestDocsReadOnlyTools(t *testing.T) {
	m := regexp.MustCompile("(?m)^\\| `read-only` \\| ([^|]*) \\|").FindStringSubmatch(readDoc(t, "docs/sandbox.md"))
	if m == nil {
		t.Fatal("docs/sandbox.md has no read-only row")
	}
	var documented []string
	for _, name := range strings.Split(m[1], ",") {
		name, _, _ = strings.Cut(strings.TrimSpace(name), " ")
		documented = append(documented, name)
	}
	model := acptest.Scenario(t, `{"name":"ok","turns":[{"calls":[{"text":"Fine."}]}]}`)
	// A skill, and a file a language server serves, so the tools offered
	// only with skills or a server are offered too.
	skill := map[string]string{".bridle/skills/check/SKILL.md": "---\nname: check\ndescription: Checks things.\n---\nCheck.\n", "a.src": "ok\n"}
	cfg, _ := userSettings(t, fakeServerSettings(t, 5, nil))
	rec := filepath.Join(t.TempDir(), "requests.jsonl")
	_, errs, code := runHeadless(t, []string{"BRIDLE_RECORD_REQUESTS=" + rec, cfg, "XDG_CACHE_HOME=" + t.TempDir()}, "", "run", "--mode", "read-only",
		"--db", filepath.Join(t.TempDir(), "b.db"), "--model", model, "--cwd", acptest.Workspace(t, skill), "hi")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	f, err := os.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &req) != nil {
		t.Fatalf("no request recorded in %s", rec)
	}
	var offered []string
	for _, tool := range req.Tools {
		offered = append(offered, tool.Name)
	}
	slices.Sort(offered)
	slices.Sort(documented)
	if !slices.Equal(offered, documented) {
		t.Errorf("read-only offers %v; docs/sandbox.md lists %v", offered, documented)
	}
}

// TestDocsEventKinds: docs/durability.md lists every kind of event the
// log holds (the Kind constants of package event), and no other.
func TestDocsEventKinds(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(acptest.Root(), "event", "event.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok && id.Name == "Kind" {
				for _, val := range v.Values {
					s, _ := strconv.Unquote(val.(*ast.BasicLit).Value)
					kinds = append(kinds, s)
				}
			}
		}
	}
	doc := readDoc(t, "docs/durability.md")
	_, list, ok := strings.Cut(doc, "Event kinds: ")
	list, _, ok2 := strings.Cut(list, "A prompt's images")
	if !ok || !ok2 || len(kinds) < 20 {
		t.Fatalf("no \"Event kinds:\" paragraph in docs/durability.md, or no Kind constants (%d)", len(kinds))
	}
	listed := regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(list, -1)
	var documented []string
	for _, m := range listed {
		if !slices.Contains(documented, m[1]) {
			documented = append(documented, m[1])
		}
	}
	for _, k := range kinds {
		if !slices.Contains(documented, k) {
			t.Errorf("docs/durability.md does not list the event kind %s", k)
		}
	}
	for _, k := range documented {
		if !slices.Contains(kinds, k) && k != "plan" {
			t.Errorf("docs/durability.md lists %s, which is no event kind", k)
		}
	}
}

// TestDocsTables: every table row in the docs belongs to a table (the
// line before is a row or the table's start), with the header's number of
// columns, so each renders.
func TestDocsTables(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(acptest.Root(), "docs", "*.md"))
	files = append(files, filepath.Join(acptest.Root(), "README.md"))
	pipe := regexp.MustCompile(`(?:^|[^\\])\|`)
	for _, f := range files {
		lines := strings.Split(readDoc(t, strings.TrimPrefix(f, acptest.Root()+"/")), "\n")
		cols, fence := 0, false
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				fence = !fence
			}
			if fence || !strings.HasPrefix(l, "|") {
				cols = 0
				continue
			}
			n := len(pipe.FindAllString(l, -1))
			switch {
			case cols == 0 && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "| --") || cols == 0 && strings.HasPrefix(lines[i+1], "|--"):
				cols = n // a header
			case cols == 0:
				t.Errorf("%s:%d: a table row outside a table (the line before is not a row):\n%s", filepath.Base(f), i+1, l)
			case n != cols:
				t.Errorf("%s:%d: %d columns, the header has %d:\n%.120s", filepath.Base(f), i+1, n, cols, l)
			}
		}
	}
}

// TestDocsGoVersion: the README names the Go version go.mod requires.
func TestDocsGoVersion(t *testing.T) {
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(readDoc(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme := readDoc(t, "README.md")
	if !strings.Contains(readme, "Go "+m[1]) {
		t.Errorf("README.md does not say Go %s, which go.mod requires", m[1])
	}
	if strings.Contains(readme, "Node 20 (") {
		t.Error("README.md says Node 20 where it means 20 or later")
	}
}
