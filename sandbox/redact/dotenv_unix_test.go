//go:build unix

package redact

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// TestLoadDotEnvTreeFIFO: a FIFO named .env (or .gitignore) is skipped,
// never waited on: nothing will ever write to it.
func TestLoadDotEnvTreeFIFO(t *testing.T) {
	ws := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{"a/.env": "K=after-fifo-value-1234\n"})
	for _, p := range []string{".env", ".gitignore", "a/.env.local"} {
		if err := syscall.Mkfifo(filepath.Join(ws, p), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	done := make(chan []string)
	go func() {
		r := New(nil)
		r.LoadDotEnvFiles(ws)
		files, _ := r.LoadDotEnvTree(ws)
		done <- files
	}()
	select {
	case files := <-done:
		if len(files) != 1 || files[0] != "a/.env" {
			t.Errorf("files read %q, want only a/.env", files)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading the .env files blocked on a FIFO")
	}
}
