package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	a, sid := watchedSession(t, ws, "", command)
	if stop := a.Prompt(sid, "run"); stop != "end_turn" {
		t.Fatalf("the prompt ended %s", stop)
	}
	return a, sid
}

// watchedSession starts bridle (with $HOME at home, unless "") and a
// session in ws, in full-auto mode, whose model runs command when
// prompted.
func watchedSession(t *testing.T, ws, home, command string) (*acptest.Agent, string) {
	t.Helper()
	quoted, _ := json.Marshal(command)
	scenario := `{"turns": [{"calls": [
		{"tool_calls": [{"name": "run_command", "input": {"command": ` + string(quoted) + `}}]},
		{"text": "done"}]}]}`
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), Home: home})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
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

// TestWatchRenamedDirectoryBounded: a directory of 200 files of 8 MiB
// (sparse: cheap to make), made while .gitignore ignored it, renamed
// once the rule is gone: bridle kept every file below it (1.6 GB read,
// hashed and written, then pruned from the checkpoints, while the
// command waited, past its timeout and a cancel). It reads no more than
// the session's checkpoints hold (256 MB); the files past that are not
// kept and the result says why.
func TestWatchRenamedDirectoryBounded(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{".gitignore": "big/\n"})
	sparseFiles(t, filepath.Join(ws, "big"), 200)
	start := time.Now()
	a, sid := watchedRun(t, ws, ": > .gitignore; mv big big2 && echo moved")
	t.Logf("the prompt took %v", time.Since(start))
	notKept, kept := 0, 0
	var why string
	for _, r := range results(t, a.DB, sid) {
		why, _ = r["unscanned"].(string)
		changed, _ := r["changed"].([]any)
		for _, c := range changed {
			c, _ := c.(map[string]any)
			switch p, _ := c["path"].(string); {
			case !strings.Contains("/"+p, "/big/"):
			case c["before"] == "not-kept" && strings.Contains(fmt.Sprint(c["why"]), "more than this session's checkpoints hold"):
				notKept++
			case c["before"] != nil:
				kept++
			}
		}
	}
	t.Logf("%d files kept before, %d not kept; the result says %q", kept, notKept, why)
	if fileIn(ws, "big2/0") == "<none>" {
		t.Fatalf("the command did not run as written")
	}
	if !strings.Contains(why, "the command changed more than this session's checkpoints hold (256 MB)") || kept > 32 || kept+notKept != 200 {
		t.Errorf("bridle kept what %d files held (%d not, past the checkpoints' bound), the result says %q", kept, notKept, why)
	}
}

// sparseFiles makes n files of 8 MiB less a byte (bridle's largest kept)
// in dir, each with its own first bytes, none taking space on disk.
func sparseFiles(t *testing.T, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprint(i)))
		if err == nil {
			_, err = fmt.Fprintf(f, "%08d", i)
		}
		if err == nil {
			err = f.Truncate(8<<20 - 1)
		}
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sparseScript makes 300 files of 8 MiB less a byte, sparse: cheap for
// the command, 2.4 GB for whoever reads them.
const sparseScript = `for i in range(300):
    with open("s%d" % i, "wb") as f:
        f.write(b"%08d" % i)
        f.truncate(8 << 20 - 1)
print("made", flush=True)
`

// TestWatchFinishBounded: after a command that made 300 sparse 8 MiB
// files, bridle read and hashed every one of them, holding the turn (a
// cancel sent meanwhile was answered only once all were read: 21.9 s for
// 1,500). It reads no more than the session's checkpoints hold, stops at
// a cancel, and the result says what it did not read.
func TestWatchFinishBounded(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"sparse.py": sparseScript})
	a, sid := watchedSession(t, ws, "", "python3 sparse.py")
	start := time.Now()
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "run"))
	a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), "made") })
	a.Notify("session/cancel", map[string]string{"sessionId": sid})
	res, rerr := a.Wait(answer)
	t.Logf("the prompt, cancelled once the command's output was seen, was answered after %v: %s %v", time.Since(start), res, rerr)
	var why string
	for _, r := range results(t, a.DB, sid) {
		why, _ = r["unscanned"].(string)
	}
	t.Logf("the result says %q", why)
	if !strings.Contains(why, "bridle did not read") || !strings.Contains(why, "so a rewind asks before putting them back") {
		t.Errorf("the result does not say bridle left files unread: %q", why)
	}
}

// TestWatchRenameOfAStandIn: a command renaming a hidden path's
// stand-in inside the workspace (the kernel refuses: it is a mount
// point) was said to move a directory in from outside the workspace.
func TestWatchRenameOfAStandIn(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"secret/s": "secret\n", "a": "a\n"})
	home := acptest.Workspace(t, map[string]string{
		".config/bridle/settings.json": `{"sandbox": {"command": {"hidden_paths": ["` + filepath.Join(ws, "secret") + `"]}}}`,
	})
	a, sid := watchedSession(t, ws, home, "mv secret secret2; echo $?")
	if stop := a.Prompt(sid, "run"); stop != "end_turn" {
		t.Fatalf("the prompt ended %s", stop)
	}
	var why string
	for _, r := range results(t, a.DB, sid) {
		why, _ = r["unscanned"].(string)
	}
	if fileIn(ws, "secret/s") != "secret\n" {
		t.Fatalf("the hidden directory moved")
	}
	if strings.Contains(why, "outside the workspace") || !strings.Contains(why, "secret (a directory the command sees in place of the workspace's, such as a hidden path's stand-in)") {
		t.Errorf("the result says %q", why)
	}
}
