package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestOpenFileLinkedOutIsNotSentToTheServer: through the real binary, a
// file the language server has open (an edit opened it) that a command
// replaces by a link to a file outside the workspace is not read by
// bridle and given to the server: the outside file's text, which the
// test server would quote back as a diagnostic, is in neither the
// command's result nor any request to the model.
func TestOpenFileLinkedOutIsNotSentToTheServer(t *testing.T) {
	const marker = "OUTSIDE-" + "KEY-Vq73Lm2X"
	outside := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(outside, []byte("BAD: "+marker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := acptest.Workspace(t, map[string]string{"a.src": "ok\n"})
	cmd, _ := json.Marshal(map[string]any{"command": "rm a.src && ln -s " + outside + " a.src"})
	scenario := `{"turns": [{"calls": [` + editCall("a.src", "ok\n", "ok\nfine\n") + `,
		{"tool_calls": [{"name": "run_command", "input": ` + string(cmd) + `}]}, {"text": "Done."}]}]}`
	cfg, _ := userSettings(t, fakeServerSettings(t, 30, nil))
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), Env: []string{cfg, "PATH=/usr/bin:/bin",
		"XDG_CACHE_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir(), "BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "go"); stop != "end_turn" {
		t.Fatalf("%s\n%s", stop, a.Stderr())
	}
	out := outputs(t, a.DB, sid)
	if len(out) != 2 {
		t.Fatalf("results %q", out)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "a.src")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the command did not replace a.src by a link (%v): %q", err, out[1])
	}
	t.Logf("the command's result:\n%s", out[1])
	if strings.Contains(out[1], marker) {
		t.Errorf("the command's result quotes the file outside the workspace:\n%s", out[1])
	}
	data, err := os.ReadFile(requests)
	if err != nil || len(data) == 0 {
		t.Fatalf("no requests recorded: %v", err)
	}
	if strings.Contains(string(data), marker) {
		t.Errorf("a request to the model holds the file outside the workspace")
	}
}
