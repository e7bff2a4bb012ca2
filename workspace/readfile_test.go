//go:build unix

package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRepositoryPipesDoNotBlock: AGENTS.md, .bridle/settings.json and
// .gitignore as named pipes are refused or skipped, never waited on.
func TestRepositoryPipesDoNotBlock(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".bridle"), 0o755)
	for _, p := range []string{"AGENTS.md", ".gitignore", ".bridle/settings.json"} {
		if err := syscall.Mkfifo(filepath.Join(dir, p), 0o644); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
	}
	done := make(chan error, 1)
	go func() {
		w, err := Open(dir, nil)
		if err != nil {
			done <- err
			return
		}
		if docs := w.Instructions(); len(docs) != 0 {
			t.Errorf("a pipe read as instructions: %v", docs)
		}
		Load(os.DirFS(dir), "")
		_, err = LoadSettings("", dir)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("settings as a pipe: %v", err)
		}
	case <-time.After(time.Minute):
		// A hang guard, not a timing assertion.
		t.Fatal("reading a repository's pipes has not returned after a minute: it blocks")
	}
}
