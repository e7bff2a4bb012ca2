package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/lsp"
)

// answering is a Code whose server answers every question with items.
type answering struct{ items []CodeItem }

func (answering) Edited(context.Context, string, []byte, []byte) string { return "" }
func (answering) Changed(context.Context, []string) string              { return "" }
func (answering) EditedFiles(context.Context, []lsp.FileText) string    { return "" }
func (answering) Offered() bool                                         { return true }
func (a answering) Ask(context.Context, CodeQuery) (CodeAnswer, error) {
	return CodeAnswer{Server: "fakels", Items: a.items}, nil
}

// TestCodeAnswersAsTheModelSeesThem: what a server names is shown as
// the model reads the workspace: relative paths, columns in characters,
// the line's text redacted; a place outside the workspace by its path
// without its text; a hidden one not at all.
func TestCodeAnswersAsTheModelSeesThem(t *testing.T) {
	env := testEnv(t)
	ws := env.Root.Dir()
	token := "ghp_" + strings.Repeat("Zq7", 12)
	os.WriteFile(filepath.Join(ws, "a.go"), []byte("package a\n\nconst key = \""+token+"\" // é😀 x\n"), 0o644)
	secret := filepath.Join(ws, "secret")
	os.Mkdir(secret, 0o755)
	os.WriteFile(filepath.Join(secret, "b.go"), []byte("package b\n"), 0o644)
	env.Root.Hide(secret)
	env.Code = answering{items: []CodeItem{
		{Path: filepath.Join(ws, "a.go"), Line: 3, Col16: 6},
		{Path: filepath.Join(ws, "a.go"), Line: 3, Col16: 62}, // x: after é (1 unit) and 😀 (2 units)
		{Path: "/usr/lib/go/src/fmt/print.go", Line: 10, Col16: 5},
		{Path: filepath.Join(secret, "b.go"), Line: 1, Col16: 0},
	}}
	in, _ := json.Marshal(map[string]any{"path": "a.go", "line": 3, "symbol": "key"})
	res := Definition{}.Run(context.Background(), env, in)
	if res.IsError {
		t.Fatal(res.Output)
	}
	for _, want := range []string{"a.go:3:7 | const key = ", "a.go:3:62 | ", "/usr/lib/go/src/fmt/print.go:10:6\n"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("the answer lacks %q:\n%s", want, res.Output)
		}
	}
	if strings.Contains(res.Output, token) {
		t.Errorf("the answer shows the token:\n%s", res.Output)
	}
	if strings.Contains(res.Output, "secret") {
		t.Errorf("the answer names a hidden file:\n%s", res.Output)
	}
}
