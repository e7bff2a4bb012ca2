package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/lsptest"
)

// fakeServerSettings are the user's settings running the test language
// server, with args, for *.src files.
func fakeServerSettings(t testing.TB, wait float64, extra map[string]any, args ...string) string {
	t.Helper()
	srv := map[string]any{"command": lsptest.Binary(t), "args": args, "files": []string{"*.src"}}
	for k, v := range extra {
		srv[k] = v
	}
	b, _ := json.Marshal(map[string]any{"lsp": map[string]any{"wait_seconds": wait, "servers": map[string]any{"fake": srv}}})
	return string(b)
}

// twoEdits breaks a.src, then mends it.
const twoEdits = `{"turns": [
	{"match": "break", "calls": [{"tool_calls": [{"name": "edit_file", "input": {"path": "a.src", "old_string": "ok\n", "new_string": "ok\nBAD: broken\n"}}]}, {"text": "Broken."}]},
	{"match": "mend", "calls": [{"tool_calls": [{"name": "edit_file", "input": {"path": "a.src", "old_string": "BAD: broken\n", "new_string": ""}}]}, {"text": "Mended."}]}
]}`

// leftOf lists the live processes running program.
func leftOf(program string) []string {
	var left []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && exe == program {
			left = append(left, e.Name())
		}
	}
	return left
}

// TestFaultyLanguageServers: through the real binary, a server that
// crashes at start or in the middle of a request, hangs, stops reading,
// sends 100 MB, floods or lies about versions never stalls a turn: each
// edit's result comes, says what happened once, and the session goes on.
func TestFaultyLanguageServers(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		wait  float64
		first []string // what the breaking edit's result says
		not   []string
		// second is what the mending edit's says (nil: nothing of the
		// server: a failure is said once).
		second []string
	}{
		{name: "crash at start", args: []string{"-mode", "crash-start"},
			first: []string{"lspserver could not start", "crashing at start, as asked", "bridle starts it again on the next edit after 1s"}},
		{name: "crash mid-request", args: []string{"-mode", "crash-mid-request", "-pull"},
			first: []string{"lspserver stopped: exit status 3", "panic: lspserver crashing mid-request, as asked"}},
		{name: "hang", args: []string{"-mode", "hang"}, wait: 2,
			first:  []string{"lspserver has not answered within 2s (it may still be loading the workspace); the diagnostics of this edit will come with a later edit's result."},
			second: []string{"lspserver has not answered within 2s"}},
		{name: "stops reading", args: []string{"-mode", "deaf"}, wait: 2,
			first: []string{"lspserver has not answered within 2s"}, second: []string{"lspserver"}},
		{name: "a 100 MB answer", args: []string{"-mode", "huge", "-pull"},
			first:  []string{"lspserver: no diagnostics for this edit", "the server's answer was cut off: a message of 1048577", "over the 16777216-byte limit"},
			second: []string{"lspserver: no diagnostics for this edit", "cut off"}},
		{name: "a 100 MB notification", args: []string{"-mode", "huge"},
			first:  []string{"lspserver: 1 new problem after this edit:\na.src:2:1 error broken"},
			second: []string{"lspserver: no new problems after this edit."}},
		{name: "flood", args: []string{"-mode", "flood"}, wait: 120,
			first:  []string{"lspserver: 500 new problems after this edit:", "… and 480 more", "(lspserver sent 99500 more for a.src, not read: bridle keeps 500 of a file's)"},
			second: []string{"lspserver: no new problems after this edit (500 in a.src from before, not repeated)."}},
		{name: "wrong versions", args: []string{"-mode", "wrong-versions"}, wait: 2,
			first: []string{"lspserver did not answer within 2s"}, not: []string{"never sent"}, second: []string{"lspserver"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := acptest.Workspace(t, map[string]string{"a.src": "ok\n"})
			wait := tt.wait
			if wait == 0 {
				wait = 60
			}
			a, sid, _ := lspAgent(t, twoEdits, fakeServerSettings(t, wait, nil, tt.args...), "/usr/bin:/bin", ws)
			for _, p := range []string{"break it", "mend it"} {
				if stop := a.Prompt(sid, p); stop != "end_turn" {
					t.Fatalf("%s: %s\n%s", p, stop, a.Stderr())
				}
			}
			out := outputs(t, a.DB, sid)
			if len(out) != 2 {
				t.Fatalf("results %q", out)
			}
			for _, w := range tt.first {
				if !strings.Contains(out[0], w) {
					t.Errorf("the breaking edit's result does not say %q:\n%s", w, out[0])
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out[0], w) {
					t.Errorf("the breaking edit's result says %q:\n%s", w, out[0])
				}
			}
			if n := strings.Count(out[0], "\n"); n > 40 {
				t.Errorf("the breaking edit's result has %d lines", n)
			}
			mended := strings.TrimPrefix(out[1], out[1][:strings.Index(out[1], "\n }\n")+4])
			if tt.second == nil && strings.Contains(out[1], "lspserver") {
				t.Errorf("the mending edit's result says the failure again:\n%s", out[1])
			}
			for _, w := range tt.second {
				if !strings.Contains(mended, w) {
					t.Errorf("the mending edit's result does not say %q:\n%s", w, out[1])
				}
			}
			if strings.Contains(tt.name, "100 MB") {
				// Cut off, never held: bridle's peak memory stays far below it.
				if rss := peakRSS(t, a.Conn.Cmd.Process.Pid); rss > 90<<20 {
					t.Errorf("bridle's peak memory is %d MiB after a 100 MB message", rss>>20)
				}
			}
			if a.CloseStdin() != 0 {
				t.Errorf("bridle did not exit cleanly:\n%s", a.Stderr())
			}
			if left := leftOf(lsptest.Binary(t)); len(left) > 0 {
				t.Errorf("the server outlived bridle: %v", left)
			}
		})
	}
}

// TestHangingServerNeverStallsCancelOrShutdown: a cancel while an edit
// waits for a server that never answers ends the turn at once, and
// bridle exits with the server gone.
func TestHangingServerNeverStallsCancelOrShutdown(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"a.src": "ok\n"})
	a, sid, _ := lspAgent(t, twoEdits, fakeServerSettings(t, 3600, nil, "-mode", "hang"), "/usr/bin:/bin", ws)
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "break it"))
	a.WaitNote(func(m acptest.Msg) bool {
		return m.Method == "session/update" && strings.Contains(string(m.Params), `"status":"in_progress"`)
	})
	a.Notify("session/cancel", map[string]any{"sessionId": sid})
	res, rpcErr := a.Wait(answer)
	if rpcErr != nil || !strings.Contains(string(res), "cancelled") {
		t.Fatalf("the cancelled prompt answered %s %v", res, rpcErr)
	}
	if code := a.CloseStdin(); code != 0 {
		t.Fatalf("bridle exited %d:\n%s", code, a.Stderr())
	}
	if left := leftOf(lsptest.Binary(t)); len(left) > 0 {
		t.Fatalf("the server outlived bridle: %v", left)
	}
}

// TestLanguageServerStaysInTheBox: a hostile server tries to write the
// workspace, read ~/.ssh, reach the host and fork without end; each
// attempt fails, as it reports from inside and as seen from outside.
func TestLanguageServerStaysInTheBox(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("SSH-KEY-CANARY"), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ws := acptest.Workspace(t, map[string]string{"a.src": "ok\n"})
	settings := fakeServerSettings(t, 60, map[string]any{"processes": 40}, "-escape", port)
	cfg, _ := userSettings(t, settings)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, twoEdits), Home: home,
		Env: []string{cfg, "PATH=/usr/bin:/bin"}})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
	if stop := a.Prompt(sid, "break it"); stop != "end_turn" {
		t.Fatalf("%s\n%s", stop, a.Stderr())
	}
	out := outputs(t, a.DB, sid)[0]
	t.Logf("the server reports:\n%s", out)
	for _, want := range []string{"escape: write workspace: refused", "escape: read ~/.ssh: \"\"", "escape: reach host port: refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("the result does not say %q:\n%s", want, out)
		}
	}
	var forks int
	if i := strings.Index(out, "forks="); i >= 0 {
		fmt.Sscan(out[i+len("forks="):], &forks)
	}
	if forks == 0 || forks > 40 {
		t.Errorf("the server started %d processes under a cap of 40:\n%s", forks, out)
	}
	if strings.Contains(out, "SSH-KEY-CANARY") {
		t.Errorf("the server read ~/.ssh")
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned.txt")); err == nil {
		t.Errorf("the server wrote the workspace")
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host's listener accepted %d connections from the server", n)
	}
	// Its caches are under bridle's cache directory, in one of its own.
	if ents, err := os.ReadDir(filepath.Join(home, ".cache", "bridle", "lsp")); err != nil || len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "fake-") {
		t.Errorf("the server's cache directory: %v %v", ents, err)
	}
}

// TestProjectCannotChooseWhatServersRun: a project's settings that name
// a server's arguments (or command), or give it initialization options
// (which name programs for some servers: tsserver's path, rust-analyzer's
// check command), refuse that server in the project: nothing starts, and
// the edit's result is as without a server; once the user trusts the
// project, its choice runs.
func TestProjectCannotChooseWhatServersRun(t *testing.T) {
	for _, tc := range []struct {
		name, project, trustedSays string
	}{
		{"args", `{"lsp":{"servers":{"fake":{"args":["-mode","crash-start"]}}}}`, "crashing at start, as asked"},
		{"initialization options", `{"lsp":{"servers":{"fake":{"initialization_options":{"tsserver":{"path":"/tmp/evil"}}}}}}`, "error broken"},
	} {
		for _, trusted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/trusted=%v", tc.name, trusted), func(t *testing.T) {
				ws := acptest.Workspace(t, map[string]string{"a.src": "ok\n", ".bridle/settings.json": tc.project})
				var user map[string]any
				json.Unmarshal([]byte(fakeServerSettings(t, 60, nil)), &user)
				if trusted {
					user["trusted_projects"] = []string{ws}
				}
				settings, _ := json.Marshal(user)
				a, sid, cache := lspAgent(t, twoEdits, string(settings), "/usr/bin:/bin", ws)
				if stop := a.Prompt(sid, "break it"); stop != "end_turn" {
					t.Fatalf("%s\n%s", stop, a.Stderr())
				}
				out := outputs(t, a.DB, sid)[0]
				_, statErr := os.Stat(filepath.Join(cache, "bridle", "lsp"))
				if trusted {
					if !strings.Contains(out, tc.trustedSays) {
						t.Errorf("the trusted project's choice did not run:\n%s", out)
					}
					return
				}
				if strings.Contains(out, "lspserver") || statErr == nil {
					t.Errorf("the project's server ran (cache made: %v):\n%s", statErr == nil, out)
				}
			})
		}
	}
}
