//go:build linux

package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// A server a command in the background starts is reached by the
// session's later commands at localhost, as on one machine: a command
// in the foreground and another in the background fetch its page. No
// other session's command reaches it, nor the host (no port is opened
// there), and once command_stop has stopped it, the same fetch is
// refused.
func TestBackgroundServerReachedByTheSession(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		if python, err = exec.LookPath("python3"); err != nil {
			t.Fatal("python3 is needed for this test (apt-get install python3): it serves the page")
		}
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed for this test (apt-get install curl): the commands fetch the page with it")
	}
	const port = 48731
	marker := fmt.Sprintf("bridle-bg-page-%d", os.Getpid())
	fetch := func(host string) string {
		return fmt.Sprintf("curl -sS -m 10 http://%s:%d/page.html", host, port)
	}
	run := func(command string, background bool) string {
		return rawToolCall("run_command", fmt.Sprintf(`{"command": %q, "background": %v}`, command, background))
	}
	turn := func(match string, calls ...string) string {
		return fmt.Sprintf(`{"match": %q, "calls": [%s, {"text": "done"}]}`, match, strings.Join(calls, ", "))
	}
	scenario := `{"turns": [` + strings.Join([]string{
		turn("start",
			run(fmt.Sprintf("%s -u -m http.server %d --bind 127.0.0.1", python, port), true),
			rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
			run(fetch("127.0.0.1"), false),
			run(fmt.Sprintf(`echo "bg2:$(%s 2>&1)"`, fetch("localhost")), true),
			rawToolCall("command_output", `{"id": "bg2", "wait_seconds": 30}`),
		),
		turn("elsewhere", run(fetch("127.0.0.1"), false)),
		turn("finish",
			rawToolCall("command_stop", `{"id": "bg1"}`),
			run(fetch("127.0.0.1"), false),
		),
	}, ", ") + `]}`
	ws := acptest.Workspace(t, map[string]string{"page.html": marker + "\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	prompt := func(sid, text string) []map[string]any {
		t.Helper()
		a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
		if stop := a.Prompt(sid, text); stop != "end_turn" {
			t.Fatalf("%s: stop reason %q; stderr:\n%s", text, stop, a.Stderr())
		}
		return toolResults(t, a.DB, sid)
	}
	output := func(r map[string]any) string { s, _ := r["output"].(string); return s }

	sid := a.NewSession(ws)
	res := prompt(sid, "start")
	if len(res) != 5 {
		t.Fatalf("%d results, want 5: %v", len(res), res)
	}
	if !strings.Contains(output(res[1]), fmt.Sprintf("port %d", port)) {
		t.Fatalf("the server did not say it listens: %q", output(res[1]))
	}
	if !strings.Contains(output(res[2]), marker) || res[2]["status"] != "completed" {
		t.Errorf("a command in the foreground did not reach the session's server: %v", res[2])
	}
	if !strings.Contains(output(res[4]), "bg2:"+marker) {
		t.Errorf("a command in the background did not reach the session's server: %q", output(res[4]))
	}
	// Nothing listens on the host's loopback.
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
		c.Close()
		t.Errorf("port %d is open on the host", port)
	}

	// Another session, while the server runs: refused.
	other := a.NewSession(acptest.Workspace(t, nil))
	ores := prompt(other, "elsewhere")
	if len(ores) != 1 || strings.Contains(output(ores[0]), marker) || !strings.Contains(output(ores[0]), "exit status 7") {
		t.Errorf("another session's command: %v", ores)
	}

	res = prompt(sid, "finish")
	if len(res) != 7 {
		t.Fatalf("%d results, want 7: %v", len(res), res)
	}
	if !strings.Contains(output(res[5]), "bg1 has ended") {
		t.Errorf("command_stop: %q", output(res[5]))
	}
	if got := output(res[6]); strings.Contains(got, marker) || !strings.Contains(got, "exit status 7") {
		t.Errorf("the fetch after command_stop was not refused: %q", got)
	}
	a.AssertValid(t)
}
