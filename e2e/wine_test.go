//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// bridle for Windows, cross-compiled for windows/amd64 and run under Wine
// (Debian's wine64) in a prefix of the test's own: its version, its
// doctor, a whole ACP session over stdio with the scripted model (a
// file read and edited, commands in a Job Object, the session loaded
// again by a second process), and the Windows unit tests of the packages
// that differ on Windows.

// wine is a private Wine prefix ready to run Go binaries.
type wine struct {
	loader, server string // wine64 and wineserver
	prefix         string
	env            []string // WINEPREFIX and WINEDEBUG
}

// Go 1.22 and later need bcryptprimitives.dll!ProcessPrng, which Wine 8
// lacks: a DLL forwarding it to advapi32's SystemFunction036 (RtlGenRandom)
// stands in, built with the MinGW binutils.
const (
	shimDef = "LIBRARY bcryptprimitives.dll\nEXPORTS\n  ProcessPrng = advapi32.SystemFunction036\n"
	shimAsm = ".text\n.globl DllMain\nDllMain:\n  mov $1, %eax\n  ret\n"
)

// newWine finds Wine and the MinGW binutils, or fails naming what is
// missing, and makes a prefix with the shim in place.
func newWine(t *testing.T) *wine {
	t.Helper()
	find := func(name string, also ...string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, p := range also {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		return ""
	}
	w := &wine{
		loader: find("wine64", "/usr/lib/wine/wine64"),
		server: find("wineserver", "/usr/lib/wine/wineserver"),
	}
	as, ld := find("x86_64-w64-mingw32-as"), find("x86_64-w64-mingw32-ld")
	var missing []string
	if w.loader == "" || w.server == "" {
		missing = append(missing, "wine64 and wineserver (Debian package wine64)")
	}
	if as == "" || ld == "" {
		missing = append(missing, "x86_64-w64-mingw32-as and -ld (Debian package binutils-mingw-w64-x86-64)")
	}
	if len(missing) > 0 {
		t.Fatalf("the Windows tests run bridle.exe under Wine and need %s: scripts/ensure-test-tools installs them", strings.Join(missing, " and "))
	}
	w.prefix = filepath.Join(t.TempDir(), "prefix")
	// No Mono or Gecko: a console program needs neither, and asking for
	// them slows the prefix's first start.
	w.env = []string{"WINEPREFIX=" + w.prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml="}
	start := time.Now()
	if out, err := w.run(t, "", "wineboot", "-i"); err != nil {
		t.Fatalf("wineboot: %v\n%s", err, out)
	}
	// The prefix's server, and any process left in it, go before the
	// prefix does.
	t.Cleanup(w.kill)
	dir := t.TempDir()
	must := func(err error, out []byte) {
		t.Helper()
		if err != nil {
			t.Fatalf("the bcryptprimitives shim: %v\n%s", err, out)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "shim.def"), []byte(shimDef), 0o644), nil)
	must(os.WriteFile(filepath.Join(dir, "e.s"), []byte(shimAsm), 0o644), nil)
	for _, c := range [][]string{{as, "e.s", "-o", "e.o"}, {ld, "--shared", "-e", "DllMain", "-o", "bcryptprimitives.dll", "e.o", "shim.def"}} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		must(err, out)
	}
	dll, err := os.ReadFile(filepath.Join(dir, "bcryptprimitives.dll"))
	must(err, nil)
	// The runtime loads it from system32 only.
	must(os.WriteFile(filepath.Join(w.prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll"), dll, 0o644), nil)
	t.Logf("Wine prefix ready in %s", time.Since(start).Round(time.Millisecond))
	return w
}

// run runs a Windows program (or a Wine tool) in the prefix, in dir ("":
// here), for at most five minutes, and returns its output. The output
// goes to a file, not a pipe: the Wine processes it starts (the prefix's
// server, a process a command left running) inherit it, and a pipe
// would stay open as long as they run.
func (w *wine) run(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.loader, args...)
	cmd.Env = append(os.Environ(), w.env...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error {
		w.kill()
		return cmd.Process.Kill()
	}
	err = cmd.Run()
	b, _ := os.ReadFile(out.Name())
	if ctx.Err() != nil {
		err = fmt.Errorf("%s did not end within five minutes", strings.Join(args, " "))
	}
	return string(b), err
}

// kill ends every process of the prefix, and its server.
func (w *wine) kill() {
	k := exec.Command(w.server, "-k")
	k.Env = append(os.Environ(), w.env...)
	k.Run()
}

// winPath is a Linux path as the Windows programs see it: Wine maps Z:\
// to /.
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// buildWindows cross-compiles the package pkg (or its tests, with
// test) for windows/amd64 into dir.
func buildWindows(t *testing.T, dir, name, pkg string, test bool) string {
	t.Helper()
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out, pkg}
	if test {
		args = []string{"test", "-c", "-o", out, pkg}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = acptest.Root()
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=windows go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}

// liveWith counts running (not zombie) processes whose command line holds
// s: Wine's processes are Linux processes with the Windows command line.
func liveWith(s string) int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(d, "stat")); err == nil {
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		n++
	}
	return n
}

// wineSession reads notes.txt, edits it, runs a command that leaves a
// process running behind it, and one that outlives its timeout.
const wineSession = `{
  "turns": [{"calls": [
    {"text": "Reading.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
    {"tool_calls": [{"name": "edit_file", "input": {"path": "notes.txt", "old_string": "hello from Linux", "new_string": "edited on Windows"}}]},
    {"tool_calls": [{"name": "run_command", "input": {"command": "echo shell=%ComSpec%& type notes.txt& start \"\" /b sleeper.exe LEFT_TAG& echo started", "description": "leave a process behind"}}]},
    {"tool_calls": [{"name": "run_command", "input": {"command": "sleeper.exe SLOW_TAG", "timeout_seconds": 2}}]},
    {"text": "Done."}
  ]}]
}`

func TestWindowsUnderWine(t *testing.T) {
	start := time.Now()
	defer func() { t.Logf("the Windows tests took %s", time.Since(start).Round(time.Millisecond)) }()
	bin := t.TempDir()
	var exe, sleeper string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the build and the prefix's first start, side by side
		defer wg.Done()
		exe = buildWindows(t, bin, "bridle.exe", ".", false)
		sleeper = buildWindows(t, bin, "sleeper.exe", "./testdata/sleeper", false)
	}()
	w := newWine(t)
	wg.Wait()
	if t.Failed() {
		return
	}

	t.Run("version", func(t *testing.T) {
		out, err := w.run(t, "", exe, "--version")
		if err != nil || !strings.Contains(out, "windows/amd64") {
			t.Fatalf("bridle.exe --version: %v\n%s", err, out)
		}
	})

	t.Run("doctor", func(t *testing.T) {
		out, err := w.run(t, t.TempDir(), exe, "doctor")
		if err != nil {
			t.Fatalf("bridle.exe doctor: %v\n%s", err, out)
		}
		for _, want := range []string{
			"ok       process tree", "job object",
			"ok       process cap", "ok       memory cap",
			"MISSING  filesystem confinement", "MISSING  network confinement", "MISSING  syscall filter", "MISSING  write watch",
			"full-auto asks before the first command",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor does not say %q:\n%s", want, out)
			}
		}
	})

	t.Run("session", func(t *testing.T) {
		wineACPSession(t, w, exe, sleeper)
	})

	t.Run("unit tests", func(t *testing.T) {
		dir := t.TempDir()
		for _, p := range []struct{ pkg, run string }{
			{"./sandbox/confine", ""},
			{"./sandbox/box", ""},
			// Wine 8 keeps no job limits to read back (TestLimits asks
			// QueryInformationJobObject): what it runs is the adoption.
			{"./sandbox/winjob", "TestAdopt"},
			{"./internal/fileid", ""},
			{"./internal/pidalive", ""},
			{"./internal/pathcmp", ""},
			{"./config", "TestDirs"},
			{"./workspace", "TestCacheVersionIsTheFilesIdentity"},
			{"./tools/mcp", ""},
		} {
			name := strings.ReplaceAll(strings.TrimPrefix(p.pkg, "./"), "/", "_") + ".test.exe"
			test := buildWindows(t, dir, name, p.pkg, true)
			args := []string{test, "-test.count=1"}
			if p.run != "" {
				args = append(args, "-test.run="+p.run)
			}
			out, err := w.run(t, dir, args...)
			if err != nil || !strings.Contains(out, "PASS") {
				t.Errorf("%s under Wine: %v\n%s", p.pkg, err, out)
			}
		}
	})
}

// wineACPSession drives bridle.exe as an editor would, over stdio.
func wineACPSession(t *testing.T, w *wine, exe, sleeper string) {
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello from Linux\n"})
	b, err := os.ReadFile(sleeper)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sleeper.exe"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("wine-%d-%d", os.Getpid(), time.Now().UnixNano())
	scenario := strings.NewReplacer("LEFT_TAG", tag+"-left", "SLOW_TAG", tag+"-slow").Replace(wineSession)
	model := acptest.Scenario(t, scenario)
	model = "scripted/" + winPath(strings.TrimPrefix(model, "scripted/"))
	cwd := winPath(ws)
	start := func() *acptest.Agent {
		// Without BRIDLE_DB: the database goes where Windows keeps a
		// program's data, %LocalAppData%\bridle, in the prefix.
		a := acptest.Start(t, acptest.Options{Bin: w.loader, Args: []string{exe}, Model: model, Env: w.env,
			DefaultDB: true, Unset: []string{"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"}})
		// Before the harness waits for bridle.exe to exit when the test
		// ends: a Windows process left running would keep its pipes open.
		t.Cleanup(w.kill)
		return a
	}

	a := start()
	// The editor offers its buffers: bridle.exe names files to it by
	// their absolute Windows paths, which this editor maps back to disk.
	a.InitializeWith(true, true)
	var opened sessionOpened
	a.MustCall("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &opened)
	sid := opened.SessionID
	sb := opened.Meta.Bridle.Sandbox
	layers := map[string]bool{}
	for _, l := range sb.Layers {
		layers[l.Name] = l.OK
	}
	for name, ok := range map[string]bool{"process tree": true, "process cap": true, "memory cap": true,
		"filesystem confinement": false, "network confinement": false, "syscall filter": false, "write watch": false} {
		if got, listed := layers[name]; !listed || got != ok {
			t.Errorf("_meta.bridle.sandbox: %s is %v (listed %v), want %v: %+v", name, got, listed, ok, sb)
		}
	}
	if sb.Unconfined == "" {
		t.Errorf("_meta.bridle.sandbox does not say commands are not kept in: %+v", sb)
	}

	// Full-auto asks before the first command runs outside a sandbox, as
	// on macOS; the answer covers the session.
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	var mu sync.Mutex
	var asked, fsPaths []string
	a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		if strings.HasPrefix(m.Method, "fs/") {
			path, content := fsParams(m)
			mu.Lock()
			fsPaths = append(fsPaths, m.Method+" "+path)
			mu.Unlock()
			linux, ok := strings.CutPrefix(path, "Z:")
			if !ok {
				return nil, &acptest.RPCError{Code: -32602, Message: "not a path on drive Z: " + path}
			}
			linux = strings.ReplaceAll(linux, `\`, "/")
			if m.Method == "fs/read_text_file" {
				return fromDisk(linux)
			}
			if err := os.WriteFile(linux, []byte(content), 0o644); err != nil {
				return nil, &acptest.RPCError{Code: -32603, Message: err.Error()}
			}
			return nil, nil
		}
		var p struct {
			ToolCall struct {
				Title string `json:"title"`
			} `json:"toolCall"`
			Options []struct {
				OptionID string `json:"optionId"`
				Name     string `json:"name"`
			} `json:"options"`
		}
		json.Unmarshal(m.Params, &p)
		mu.Lock()
		asked = append(asked, m.Method+": "+p.ToolCall.Title)
		for _, o := range p.Options {
			asked = append(asked, o.Name)
		}
		mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_always"}}, nil
	}
	if stop := a.Prompt(sid, "read notes.txt, edit it, run two commands"); stop != "end_turn" {
		t.Fatalf("stopReason = %q\n%s", stop, a.Stderr())
	}
	mu.Lock()
	q := strings.Join(asked, "\n")
	mu.Unlock()
	if !strings.Contains(q, "session/request_permission") || !strings.Contains(q, "without the sandbox") {
		t.Errorf("full-auto ran a command outside a sandbox without asking; questions:\n%s", q)
	}

	// The editor was asked about the file by its absolute Windows path.
	mu.Lock()
	fsCalls := strings.Join(fsPaths, "\n")
	mu.Unlock()
	notes := winPath(filepath.Join(ws, "notes.txt"))
	for _, want := range []string{"fs/read_text_file " + notes, "fs/write_text_file " + notes} {
		if !strings.Contains(fsCalls, want) {
			t.Errorf("the editor was not asked %q; it was asked:\n%s", want, fsCalls)
		}
	}
	// The edit is on disk (through the editor, which saves at once here).
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != "edited on Windows\n" {
		t.Errorf("notes.txt holds %q, %v", b, err)
	}
	results := toolOutputs(t, a, sid)
	if len(results) != 4 {
		t.Fatalf("tool results: %q", results)
	}
	if !strings.Contains(results[0], "hello from Linux") {
		t.Errorf("read_file returned %q", results[0])
	}
	if !strings.Contains(strings.ToLower(results[2]), `shell=c:\windows\system32\cmd.exe`) ||
		!strings.Contains(results[2], "edited on Windows") || !strings.Contains(results[2], "started") {
		t.Errorf("the command through cmd.exe returned %q", results[2])
	}
	if !strings.Contains(results[3], "timed out") {
		t.Errorf("the slow command returned %q", results[3])
	}
	// The Job Object killed what the commands left behind: the process
	// started in the background once its command ended, the slow one
	// at its timeout.
	for _, which := range []string{"-left", "-slow"} {
		waitFor(t, func() bool { return liveWith(tag+which) == 0 })
	}
	a.CloseStdin()
	if code := a.WaitExit(); code != 0 {
		t.Errorf("bridle.exe exited %d\n%s", code, a.Stderr())
	}
	db, _ := filepath.Glob(filepath.Join(w.prefix, "drive_c", "users", "*", "AppData", "Local", "bridle", "bridle.db"))
	if len(db) != 1 {
		t.Errorf("no database in %%LocalAppData%%\\bridle of the prefix: %v", db)
	}

	// A second process loads the session and replays it.
	b2 := start()
	b2.Initialize()
	b2.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, nil)
	replay := acptest.Transcript(b2.Updates(sid))
	text := strings.Join(replay, "\n")
	for _, want := range []string{"read notes.txt, edit it, run two commands", "Reading.", "Done."} {
		if !strings.Contains(text, want) {
			t.Errorf("the replay lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "tool_call"); n < 4 {
		t.Errorf("the replay shows %d tool calls, want 4:\n%s", n, text)
	}
}

// toolOutputs are the outputs of the session's tool calls as the editor
// was last told them, in order.
func toolOutputs(t *testing.T, a *acptest.Agent, sid string) []string {
	t.Helper()
	var order []string
	out := map[string]string{}
	for _, u := range a.Updates(sid) {
		id, _ := u.Fields["toolCallId"].(string)
		switch u.Kind {
		case "tool_call":
			order = append(order, id)
		case "tool_call_update":
			if st, _ := u.Fields["status"].(string); st != "completed" && st != "failed" {
				continue
			}
			var text []string
			items, _ := u.Fields["content"].([]any)
			for _, it := range items {
				c, _ := it.(map[string]any)
				inner, _ := c["content"].(map[string]any)
				if s, ok := inner["text"].(string); ok {
					text = append(text, s)
				}
			}
			out[id] = strings.Join(text, "\n")
		}
	}
	var res []string
	for _, id := range order {
		res = append(res, out[id])
	}
	return res
}
