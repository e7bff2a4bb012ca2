package lsp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/internal/lsptest"
	"github.com/bridle-dev/bridle/sandbox/box"
)

// withGopls returns a manager running the pinned gopls, and a module.
func withGopls(t *testing.T) (*Manager, string) {
	t.Helper()
	dir := lsptest.Gopls(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed on PATH for gopls")
	}
	raw, _ := json.Marshal(map[string]any{"wait_seconds": 120})
	b := box.New(box.Options{})
	t.Cleanup(func() { b.Close() })
	home, _ := os.UserHomeDir()
	m := NewManager(Config{
		Box:      b,
		Settings: func(cwd string) *config.Config { return &config.Config{Cwd: cwd, Settings: config.Settings{LSP: raw}} },
		Env: func() []string {
			return []string{"PATH=" + dir + ":" + filepath.Dir(goBin) + ":/usr/bin:/bin", "HOME=" + home}
		},
		CacheDir: t.TempDir(),
		Look:     func(name string) (string, error) { return exec.LookPath(filepath.Join(dir, name)) },
		Timeout:  60 * time.Second,
	})
	t.Cleanup(m.Close)
	ws := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/demo\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(add(1, 2))\n}\n",
		"util.go": "package main\n\nfunc add(a, b int) int { return a + b }\n",
	} {
		os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644)
	}
	return m, ws
}

// TestGoplsHearsOfDiskChanges: gopls registers for the files it watches,
// and a change on disk the watcher reports reaches it: the open file's
// diagnostics change.
func TestGoplsHearsOfDiskChanges(t *testing.T) {
	m, ws := withGopls(t)
	main := filepath.Join(ws, "main.go")
	text, _ := os.ReadFile(main)
	got := edit(t, m.Workspace([]string{ws}), main, string(text), string(text)+"\n// more\n")
	says(t, "the edit", got, "gopls: no new problems after this edit.")
	srv := running(t, m)
	srv.watchMu.Lock()
	t.Logf("gopls watches %v", srv.watch)
	srv.watchMu.Unlock()
	util := filepath.Join(ws, "util.go")
	os.WriteFile(util, []byte("package main\n\nfunc add(a, b string) string { return a + b }\n"), 0o644)
	m.FilesChanged([]string{ws}, []string{util})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		f, ok := srv.diags.wait(ctx, srv.Done(), main, 2)
		if !ok {
			t.Fatal("gopls never said what the change on disk broke in main.go")
		}
		if len(f.items) > 0 {
			t.Logf("main.go: %v", f.items[0].Message)
			return
		}
		// Wait for the next publication.
		srv.diags.mu.Lock()
		ch := srv.diags.changed
		srv.diags.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("gopls never said what the change on disk broke in main.go")
		}
	}
}

// TestGoplsAnswersTheCodeTools: the code tools' questions, asked of
// gopls, name the right places.
func TestGoplsAnswersTheCodeTools(t *testing.T) {
	m, ws := withGopls(t)
	w := m.Workspace([]string{ws})
	if !w.Offered() {
		t.Fatal("a module with gopls found is not offered the code tools")
	}
	main := filepath.Join(ws, "main.go")
	util := filepath.Join(ws, "util.go")
	mainText, _ := os.ReadFile(main)
	utilText, _ := os.ReadFile(util)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for _, c := range []struct {
		name string
		q    Query
		want []Item // the first items: Path, Line, Col16 compared; Label when set
		text string // in hover's Text
	}{
		{"definition", Query{Op: OpDefinition, Path: main, Text: mainText, Line: 6, Column: 14},
			[]Item{{Path: util, Line: 3, Col16: 5}}, ""},
		{"references", Query{Op: OpReferences, Path: util, Text: utilText, Line: 3, Column: 6},
			[]Item{{Path: main, Line: 6, Col16: 13}, {Path: util, Line: 3, Col16: 5}}, ""},
		{"hover", Query{Op: OpHover, Path: main, Text: mainText, Line: 6, Column: 14}, nil, "func add(a int, b int) int"},
		{"outline", Query{Op: OpSymbols, Path: util, Text: utilText},
			[]Item{{Path: util, Line: 3, Col16: 5, Label: "function add"}}, ""},
		{"workspace symbols", Query{Op: OpSymbols, Query: "add"},
			[]Item{{Path: util, Line: 3, Col16: 5, Label: "function example.com/demo.add"}}, ""},
		{"diagnostics of a file", Query{Op: OpDiagnostics, Path: main, Text: mainText, Severity: "warning"}, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ans, err := w.Ask(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if ans.Server != "gopls" {
				t.Errorf("server %q", ans.Server)
			}
			if !strings.Contains(ans.Text, c.text) {
				t.Errorf("hover text %q lacks %q", ans.Text, c.text)
			}
			if c.q.Op == OpSymbols && c.q.Path == "" && len(ans.Items) > 1 {
				ans.Items = ans.Items[:1] // the library's symbols come after
			}
			if len(ans.Items) != len(c.want) {
				t.Fatalf("items %+v, want %+v", ans.Items, c.want)
			}
			for i, it := range ans.Items {
				want := c.want[i]
				if want.Label == "" {
					it.Label = ""
				}
				if it != want {
					t.Errorf("item %d %+v, want %+v", i, it, want)
				}
			}
		})
	}
}
