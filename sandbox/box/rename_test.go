//go:build linux

package box

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHiddenCannotBeMovedAside: a command cannot rename a directory above
// a hidden path to reveal it or to put a file of its own in its place.
func TestHiddenCannotBeMovedAside(t *testing.T) {
	home := t.TempDir()
	settings := filepath.Join(home, ".config", "bridle", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o700)
	os.WriteFile(settings, []byte("USER-SETTINGS"), 0o600)
	_, out := marked(t, New(Options{}), context.Background(),
		`mv .config .config2; echo mv=$?; cat .config2/bridle/settings.json; mkdir -p .config/bridle && echo EVIL > .config/bridle/settings.json; echo planted=$?`,
		func(s *Spec) { s.Dir, s.Writable, s.Hidden = home, []string{home}, []string{filepath.Dir(settings)} })
	got, err := os.ReadFile(settings)
	if err != nil || string(got) != "USER-SETTINGS" || strings.Contains(out, "USER-SETTINGS") {
		t.Fatalf("the hidden directory was moved aside: settings %q (%v), output %q", got, err, out)
	}
}
