package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// onTerminal runs the binary with stdin, stdout and stderr on a
// pseudo-terminal (python3's pty module, which make test's tools
// include), input typed at it, and returns what the terminal showed.
func onTerminal(t *testing.T, input string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("this test needs python3 (for a pseudo-terminal): install it, or run make test, which does")
	}
	script := "import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)"
	cmd := exec.Command("python3", append([]string{"-c", script, acptest.Binary(t)}, args...)...)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bridle %v on a terminal: %v\n%s", args, err, out)
	}
	return strings.ReplaceAll(string(out), "\r\n", "\n")
}

// TestCLITerminal: on a terminal, bridle run says what it waits for
// (nothing with --quiet), and bridle rewind asks whether to put back a
// file the user changed, and does what the answer says.
func TestCLITerminal(t *testing.T) {
	model := acptest.Scenario(t, `{"name":"w","turns":[{"calls":[{"tool_calls":[{"name":"write_file","input":{"path":"a.txt","content":"agent\n"}}]},{"text":"Wrote it."}]}]}`)
	db := filepath.Join(t.TempDir(), "b.db")
	dir := acptest.Workspace(t, nil)
	out := onTerminal(t, "", "run", "--mode", "auto-edit", "--db", db, "--model", model, "--cwd", dir, "Write a.txt")
	if strings.Count(out, "bridle: waiting for the model") != 2 || !strings.Contains(out, "Wrote it.") {
		t.Errorf("bridle run on a terminal showed no progress:\n%s", out)
	}
	quiet := onTerminal(t, "", "run", "--quiet", "--db", filepath.Join(t.TempDir(), "q.db"), "--model", model, "--cwd", acptest.Workspace(t, nil), "--mode", "auto-edit", "Write a.txt")
	if strings.Contains(quiet, "bridle:") {
		t.Errorf("--quiet on a terminal still said:\n%s", quiet)
	}

	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sid := sessionsOf(t, db)[0].SessionID
	out = onTerminal(t, "y\n", "rewind", sid, "1", "--db", db)
	if !strings.Contains(out, "a.txt") || !strings.Contains(out, "[y/N]") {
		t.Errorf("rewind did not ask on the terminal:\n%s", out)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("answered y, yet a.txt is still there (%v):\n%s", err, out)
	}
}
