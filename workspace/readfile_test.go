//go:build unix

package workspace

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRepositoryPipesDoNotBlock: AGENTS.md and .gitignore as named pipes
// are skipped, never waited on (.bridle/settings.json: config's
// TestSettingsPipeDoesNotBlock).
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
		if docs, skipped := w.Instructions(readPlain); len(docs) != 0 || len(skipped) != 1 {
			t.Errorf("a pipe read as instructions: %v (skipped: %v)", docs, skipped)
		}
		Load(os.DirFS(dir), "")
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		// A hang guard, not a timing assertion.
		t.Fatal("reading a repository's pipes has not returned after a minute: it blocks")
	}
}
