package lsp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
