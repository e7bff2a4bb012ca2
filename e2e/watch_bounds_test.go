package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// The box's watch of what a command writes holds a record of it in
// bridle's memory (checkpoint.Recorder): a hostile command must not be
// able to grow it without bound, nor hold the session past its timeout
// or a cancel while bridle keeps what it changed.

// watchedRun runs one prompt whose model runs command in ws, and returns
// bridle and the session.
func watchedRun(t *testing.T, ws, command string) (*acptest.Agent, string) {
	t.Helper()
	quoted, _ := json.Marshal(command)
	scenario := `{"turns": [{"calls": [
		{"tool_calls": [{"name": "run_command", "input": {"command": ` + string(quoted) + `}}]},
		{"text": "done"}]}]}`
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "run"); stop != "end_turn" {
		t.Fatalf("the prompt ended %s", stop)
	}
	return a, sid
}

// floodScript opens a 4 KB path through a link loop to write, again and
// again: each call fails in the kernel, and each is one the box's watch
// cannot follow.
const floodScript = `import os
os.symlink("loop", "loop")
p = "loop/" + "x" * 4000
for i in range(50000):
    try:
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT))
    except OSError:
        pass
print("flooded")
`

// TestWatchFloodOfUnfollowedCalls: 50,000 calls the watch cannot follow,
// each naming a 4 KB path, once held 200 MB of bridle's memory (and
// without end, as long as the command ran); the record names the first
// few, cut short, and counts the rest.
func TestWatchFloodOfUnfollowedCalls(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"flood.py": floodScript})
	a, sid := watchedRun(t, ws, "python3 flood.py")
	var why string
	for _, r := range results(t, a.DB, sid) {
		why, _ = r["unscanned"].(string)
	}
	hwm := peakRSS(t, a.Cmd.Process.Pid)
	t.Logf("bridle's peak RSS %d MiB; the result says %d bytes: %.300s", hwm>>20, len(why), why)
	if !strings.Contains(why, "and 49997 more") {
		t.Errorf("the result does not count the calls bridle could not follow: %.300q", why)
	}
	if len(why) > 2000 {
		t.Errorf("the result names the calls bridle could not follow in %d bytes, not cut short", len(why))
	}
	if hwm > 150<<20 {
		t.Errorf("bridle's peak RSS %d MiB: the record held every call's path", hwm>>20)
	}
}
