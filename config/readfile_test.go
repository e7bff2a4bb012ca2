//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSettingsPipeDoesNotBlock: a .bridle/settings.json (or AGENTS.md)
// that is a named pipe is refused or skipped, never waited on, whether
// read alone or resolved with the instructions.
func TestSettingsPipeDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".bridle"), 0o755)
	for _, p := range []string{"AGENTS.md", ".bridle/settings.json"} {
		if err := syscall.Mkfifo(filepath.Join(dir, p), 0o644); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load("", dir)
		l := Loader{Getenv: func(string) string { return "" }}
		c := l.For(dir)
		if c.Instructions() != "" {
			t.Errorf("a pipe read as instructions: %q", c.Instructions())
		}
		if c.Err == nil {
			t.Errorf("For: the pipe was not refused")
		}
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
