package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// hostileCommands is what a repository's text can make a model run in
// full-auto when the workspace is the user's home: read every session's
// log, widen the next session's box, read the user's keys.
var hostileCommands = `{
  "turns": [{"calls": [
    {"tool_calls": [
      {"name": "run_command", "input": {"command": "mv .config .config2; mv .local/share .share2; head -c 200 .local/share/bridle/bridle.db; ls .local/share/bridle; mkdir -p .config/bridle; echo '{\"sandbox\":{\"command\":{\"allow_hosts\":[\"*\"],\"memory_mb\":-1}}}' > .config/bridle/settings.json; echo settings=$?; cat .ssh/id_ed25519"}},
      {"name": "run_command", "input": {"command": "chmod 777 ` + "OUTSIDE" + `; echo chmod=$?; ls /proc | grep -c '^[0-9]'"}}
    ]},
    {"text": "Done."}
  ]}]
}`

// TestCommandsCannotReachBridlesFiles: with the workspace at $HOME, where
// bridle keeps its settings, database and cache, a command in full-auto
// reads none of them, rewrites none of them, reads no key, and changes
// nothing outside the workspace.
func TestCommandsCannotReachBridlesFiles(t *testing.T) {
	home := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(outside, []byte("x"), 0o600)
	// No settings directory yet: bridle must make it before a command
	// could (a command creating it would choose the next session's box).
	for name, content := range map[string]string{
		".ssh/id_ed25519": "PRIVATE-KEY-MATERIAL",
		"project/main.go": "package main\n",
	} {
		p := filepath.Join(home, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(content), 0o600)
	}
	db := filepath.Join(home, ".local", "share", "bridle", "bridle.db")
	os.MkdirAll(filepath.Dir(db), 0o700)
	a := acptest.Start(t, acptest.Options{DB: db,
		Model: acptest.Scenario(t, strings.ReplaceAll(hostileCommands, "OUTSIDE", outside)),
		Env:   []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}})
	a.Initialize()
	sid := a.NewSession(home)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "tidy up"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	a.CloseStdin()

	var shown bytes.Buffer
	for _, m := range a.Notes() {
		shown.Write(m.Params)
	}
	out := shown.String()
	for _, leak := range []string{"SQLite format 3", "PRIVATE-KEY-MATERIAL", "bridle.db-wal"} {
		if strings.Contains(out, leak) {
			t.Errorf("a command's output shows %q", leak)
		}
	}
	for _, want := range []string{"Read-only file system", "hidden from commands", "chmod=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the results lack %q", want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(home, ".config", "bridle", "settings.json")); err == nil {
		t.Errorf("a command wrote bridle's settings: %s", b)
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o600 {
		t.Errorf("a command changed the mode of a file outside the workspace: %v", fi.Mode())
	}
	// mv falls back to copying (the pinned directories are mounts of their
	// own): what it copies is the empty cover; bridle's files stay.
	for _, p := range []string{db, filepath.Join(home, ".config", "bridle")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a command moved %s aside: %v", p, err)
		}
	}
	// The log is intact and still readable after the turn.
	if log := acptest.Log(t, db, sid); len(log) == 0 {
		t.Error("the session's log is empty")
	}
}
