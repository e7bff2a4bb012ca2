//go:build unix

package redact

import (
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// TestDotEnvsFIFO: a FIFO named .env (or .gitignore) is skipped, never
// waited on: nothing will ever write to it. Also one made after the
// watcher's walk.
func TestDotEnvsFIFO(t *testing.T) {
	ws := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{"a/.env": "K=after-fifo-value-1234\n"})
	for _, p := range []string{".env", ".gitignore", "a/.env.local"} {
		if err := syscall.Mkfifo(filepath.Join(ws, p), 0o644); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
	}
	for _, tt := range ways(t, ws) {
		t.Run(tt.name, func(t *testing.T) {
			if err := syscall.Mkfifo(filepath.Join(ws, "a", ".env."+tt.name), 0o644); err != nil {
				t.Fatalf("mkfifo: %v", err)
			}
			done := make(chan []string)
			go func() {
				r := New(nil)
				r.LoadDotEnvFiles(ws)
				done <- names(current(t, tt.envs))
			}()
			select {
			case files := <-done:
				if !slices.Equal(files, []string{"a/.env"}) {
					t.Errorf("files read %q, want only a/.env", files)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("reading the .env files blocked on a FIFO")
			}
		})
	}
}
