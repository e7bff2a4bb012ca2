//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/sandbox/confine"
)

// TestSettingsPipeDoesNotBlock: a .bridle/settings.json (or AGENTS.md)
// that is a named pipe is skipped with a warning saying so, never waited
// on, whether read alone or resolved with the instructions.
func TestSettingsPipeDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".bridle"), 0o755)
	for _, p := range []string{"AGENTS.md", ".bridle/settings.json"} {
		if err := syscall.Mkfifo(filepath.Join(dir, p), 0o644); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, err := Load("", dir, confine.ProjectFiles{}, Pins{Dir: t.TempDir()})
		if err != nil || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "named pipe") {
			t.Errorf("settings as a pipe: %v, warnings %q; want it skipped, saying why", err, s.Warnings)
		}
		l := Loader{Getenv: func(string) string { return "" }}
		c := l.For(dir)
		text, skipped := c.Instructions()
		if text != "" || len(skipped) != 1 || !strings.Contains(skipped[0], "named pipe") {
			t.Errorf("AGENTS.md as a pipe: instructions %q, skipped %q", text, skipped)
		}
		if c.Err != nil {
			t.Errorf("For: %v", c.Err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		// A hang guard, not a timing assertion.
		t.Fatal("reading a repository's pipes has not returned after a minute: it blocks")
	}
}
