//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestFullTmpfsClosesTheTurn fills, with a command, a real 4 MB tmpfs that
// holds both the workspace and the database.
func TestFullTmpfsClosesTheTurn(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Fatalf("cannot mount a 4 MB tmpfs on %s (%v): this test needs root (CAP_SYS_ADMIN), as in CI", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	model := acptest.Scenario(t, diskScenario("head -c 10M /dev/zero > fill"))
	a := acptest.Start(t, acptest.Options{DB: filepath.Join(dir, "data", "bridle.db"), Model: model})
	sid := runIntoFullDisk(t, a, ws)

	if err := os.Remove(filepath.Join(ws, "fill")); err != nil {
		t.Fatalf("free the space: %v", err)
	}
	if got := a.Prompt(sid, "and now"); got != "end_turn" {
		t.Fatalf("the prompt once space is back: stopReason %q", got)
	}
	checkClosedAsUnknown(t, events(t, a, sid), "outcome unknown: it ran, but bridle could not record its result")
	seen := len(a.Updates(sid))
	a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	checkReplay(t, a.Updates(sid)[seen:])
	a.AssertValid(t)
}
