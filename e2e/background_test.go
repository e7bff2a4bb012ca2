//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// bgScenario is a turn that starts command in the background, then
// plays calls, then ends.
func bgScenario(command string, calls ...string) string {
	all := append([]string{fmt.Sprintf(`{"tool_calls": [{"name": "run_command", "input": {"command": %q, "background": true}}]}`, command)}, calls...)
	return `{"turns": [{"calls": [` + strings.Join(append(all, `{"text": "done"}`), ",") + `]}, {"calls": [{"text": "again"}]}]}`
}

// cardID is the editor's id of the card of the call key (event.ToolCallID).
func cardID(key string) string {
	parts := strings.Split(key, "/")
	return "call-" + parts[len(parts)-2] + "-" + parts[len(parts)-1]
}

// rawToolCall is a scripted call of a tool whose input is JSON text.
func rawToolCall(name, input string) string {
	return fmt.Sprintf(`{"tool_calls": [{"name": %q, "input": %s}]}`, name, input)
}

// serve starts bridle with o in a workspace of files, opens a session in
// full-auto mode and plays the prompt "serve" to its end.
func serve(t *testing.T, o acptest.Options, files map[string]string) (a *acptest.Agent, sid, ws string) {
	t.Helper()
	ws = acptest.Workspace(t, files)
	a = acptest.Start(t, o)
	a.Initialize()
	sid = a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "serve"); stop != "end_turn" {
		t.Fatalf("stop reason %q; stderr:\n%s", stop, a.Stderr())
	}
	return a, sid, ws
}

// callUpdates are the session's tool_call_update notifications for the
// card toolCallId.
func callUpdates(a *acptest.Agent, sid, id string) []map[string]any {
	var out []map[string]any
	for _, u := range a.Updates(sid) {
		if u.Kind == "tool_call_update" && u.Fields["toolCallId"] == id {
			out = append(out, u.Fields)
		}
	}
	return out
}

// A command started in the background runs on after its call: its output
// is read twice (the second read has only what is new), input written to
// it is answered, and command_stop ends it and everything it started.
// Its card stays live (in_progress, its output streamed) until it ends,
// then is completed; its end is recorded.
func TestBackgroundCommandOutputInputStop(t *testing.T) {
	marker := fmt.Sprintf("bridle-bg-test-%d", os.Getpid())
	command := fmt.Sprintf(`sh -c 'sleep 301 # %[1]s-child' & echo ready-%[1]s; while read l; do echo "echo:$l"; done`, marker)
	scenario := bgScenario(command,
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
		rawToolCall("command_input", `{"id": "bg1", "text": "hello\n"}`),
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
		rawToolCall("command_stop", `{"id": "bg1"}`),
		rawToolCall("command_output", `{"id": "bg1"}`),
	)
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	stop := a.Prompt(sid, "serve")
	if stop != "end_turn" {
		t.Fatalf("stop reason %q; stderr:\n%s", stop, a.Stderr())
	}
	if n := processesWith(marker); n != 0 {
		t.Errorf("%d processes of the stopped command are left", n)
	}
	res := toolResults(t, a.DB, sid)
	if len(res) != 6 {
		t.Fatalf("%d results, want 6: %v", len(res), res)
	}
	out := func(i int) string { s, _ := res[i]["output"].(string); return s }
	if res[0]["background"] != "bg1" || !strings.Contains(out(0), "started in the background as bg1") {
		t.Fatalf("start: %v", res[0])
	}
	if !strings.Contains(out(1), "ready-"+marker) || !strings.Contains(out(1), "[bg1 is running]") {
		t.Errorf("first read: %q", out(1))
	}
	if res[2]["status"] != "completed" {
		t.Errorf("input: %v", res[2])
	}
	if !strings.Contains(out(3), "echo:hello") || strings.Contains(out(3), "ready-") {
		t.Errorf("second read (only what is new): %q", out(3))
	}
	if !strings.Contains(out(4), "[bg1 has ended: [stopped: by command_stop") {
		t.Errorf("stop: %q", out(4))
	}
	if !strings.Contains(out(5), "has ended") {
		t.Errorf("read after the stop: %q", out(5))
	}
	ended := eventsOf(acptest.Log(t, a.DB, sid), "command_finished")
	if len(ended) != 1 || ended[0]["status"] != "stopped" || ended[0]["id"] != "bg1" || ended[0]["key"] != res[0]["key"] {
		t.Fatalf("command_finished: %v", ended)
	}
	// The card: in_progress with the start's result, output streamed,
	// then completed by the command's end.
	ups := callUpdates(a, sid, cardID(res[0]["key"].(string)))
	var states []string
	for _, u := range ups {
		st, _ := u["status"].(string)
		b, _ := json.Marshal(u["content"])
		switch {
		case strings.Contains(string(b), "started in the background"):
			states = append(states, "result:"+st)
		case st != "":
			states = append(states, st)
		case strings.Contains(string(b), "ready-"):
			states = append(states, "output")
		}
	}
	got := strings.Join(states, " ")
	if !strings.Contains(got, "result:in_progress") || !strings.HasSuffix(got, "completed") || strings.Index(got, "result:in_progress") > strings.LastIndex(got, "completed") {
		t.Fatalf("the card's updates: %q (%d updates)", got, len(ups))
	}
	a.AssertValid(t)
}

// A command in the background that prompts without a newline and waits
// for its answer ("Password: ", "Continue? [y/N] "): command_output shows
// the prompt once the command has been quiet a moment, so the model knows
// to answer; command_input answers, and the next read has what follows,
// without the prompt again. Before, the unfinished line was held until its
// end: the read waited out its wait_seconds and said "[no new output]".
func TestBackgroundPromptWithoutANewline(t *testing.T) {
	scenario := bgScenario(`printf 'Password: '; read x; echo "got $x"`,
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 10}`),
		rawToolCall("command_input", `{"id": "bg1", "text": "open sesame\n"}`),
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 10}`),
	)
	a, sid, _ := serve(t, acptest.Options{Model: acptest.Scenario(t, scenario)}, nil)
	res := toolResults(t, a.DB, sid)
	if len(res) != 4 {
		t.Fatalf("%d results, want 4: %v", len(res), res)
	}
	out := func(i int) string { s, _ := res[i]["output"].(string); return s }
	if !strings.HasPrefix(out(1), "Password: \n") || !strings.Contains(out(1), "it may be waiting for input") || !strings.Contains(out(1), "[bg1 is running]") {
		t.Errorf("the read while it waits for its answer: %q", out(1))
	}
	if !strings.Contains(out(3), "got open sesame\n") || strings.Contains(out(3), "Password") {
		t.Errorf("the read after the answer: %q", out(3))
	}
}

// A session runs at most 4 commands in the background at once; a
// session/cancel stops them (and their ends are recorded as stopped).
func TestBackgroundCommandsBoundedAndStoppedByCancel(t *testing.T) {
	marker := fmt.Sprintf("bridle-bg-bound-%d", os.Getpid())
	command := fmt.Sprintf(`sleep 302 # %s`, marker)
	start := fmt.Sprintf(`{"name": "run_command", "input": {"command": %q, "background": true}}`, command)
	scenario := `{"turns": [{"calls": [{"tool_calls": [` + strings.Repeat(start+",", 4) + start + `]}, {"text": "done"}]}]}`
	a, sid, _ := serve(t, acptest.Options{Model: acptest.Scenario(t, scenario)}, nil)
	res := toolResults(t, a.DB, sid)
	if len(res) != 5 {
		t.Fatalf("%d results: %v", len(res), res)
	}
	for i, r := range res[:4] {
		if r["background"] != fmt.Sprintf("bg%d", i+1) {
			t.Errorf("start %d: %v", i+1, r)
		}
	}
	if res[4]["status"] != "failed" || !strings.Contains(res[4]["output"].(string), "4 commands already run in the background") {
		t.Errorf("the fifth: %v", res[4])
	}
	waitFor(t, func() bool { return processesWith(marker) == 4 })
	a.Notify("session/cancel", map[string]string{"sessionId": sid})
	waitFor(t, func() bool { return processesWith(marker) == 0 })
	waitFor(t, func() bool { return len(eventsOf(acptest.Log(t, a.DB, sid), "command_finished")) == 4 })
	for _, e := range eventsOf(acptest.Log(t, a.DB, sid), "command_finished") {
		if e["status"] != "stopped" || !strings.Contains(e["summary"].(string), "cancelled") {
			t.Errorf("command_finished %v", e)
		}
	}
}

// A command left running in the background when bridle is killed is gone
// with it, and the next bridle to open the session records its end as
// unknown; its card is shown done.
func TestBackgroundCommandGoneAfterACrash(t *testing.T) {
	marker := fmt.Sprintf("bridle-bg-crash-%d", os.Getpid())
	command := fmt.Sprintf(`sh -c 'sleep 303 # %[1]s-child' & sleep 304 # %[1]s`, marker)
	scenario := strings.Replace(bgScenario(command), `{"calls": [{"text": "again"}]}`,
		`{"calls": [{"tool_calls": [{"name": "run_command", "input": {"command": "echo second", "background": true}}]}, {"text": "again"}]}`, 1)
	model := acptest.Scenario(t, scenario)
	a, sid, ws := serve(t, acptest.Options{Model: model}, nil)
	waitFor(t, func() bool { return processesWith(marker) == 2 })
	a.Signal(syscall.SIGKILL)
	a.WaitExit()
	waitFor(t, func() bool { return processesWith(marker) == 0 })

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	ended := eventsOf(acptest.Log(t, b.DB, sid), "command_finished")
	if len(ended) != 1 || ended[0]["status"] != "unknown" || ended[0]["id"] != "bg1" {
		t.Fatalf("command_finished after recovery: %v", ended)
	}
	// The replay shows the card done (failed: how it ended is unknown).
	var done bool
	for _, u := range b.Updates(sid) {
		if u.Kind == "tool_call_update" && u.Fields["status"] == "failed" {
			b, _ := json.Marshal(u.Fields["content"])
			done = done || strings.Contains(string(b), "bridle ended while the command ran")
		}
	}
	if !done {
		t.Errorf("the replay did not show the command's card done")
	}
	// A command started now is numbered after the log's.
	b.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := b.Prompt(sid, "serve again"); stop != "end_turn" {
		t.Fatalf("stop reason %q", stop)
	}
	res := toolResults(t, b.DB, sid)
	if last := res[len(res)-1]; last["background"] != "bg2" {
		t.Errorf("the next command: %v", last)
	}
}

// What a command in the background changes in the workspace after its
// call's result is recorded when it ends (command_finished), and /rewind
// puts it back: watched by the box, or found by scans around it.
func TestBackgroundCommandChangesRewound(t *testing.T) {
	for _, mode := range []string{"watch", "scan"} {
		t.Run(mode, func(t *testing.T) {
			settings, _ := userSettings(t, fmt.Sprintf(`{"sandbox": {"command": {"checkpoint": %q}}}`, mode))
			backgroundChangesRewound(t, settings)
		})
	}
}

func backgroundChangesRewound(t *testing.T, settings string) {
	scenario := bgScenario(`read l; echo changed > a.txt; echo new > made.txt; echo written; read l`,
		rawToolCall("command_input", `{"id": "bg1", "text": "go\n"}`),
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
		rawToolCall("command_stop", `{"id": "bg1"}`),
	)
	a, sid, ws := serve(t, acptest.Options{Model: acptest.Scenario(t, scenario), Env: []string{settings}}, map[string]string{"a.txt": "orig\n"})
	if got := readFile(t, ws, "made.txt"); got != "new\n" {
		t.Fatalf("the command did not write: %q", got)
	}
	ended := eventsOf(acptest.Log(t, a.DB, sid), "command_finished")
	if len(ended) != 1 {
		t.Fatalf("command_finished: %v", ended)
	}
	var changed []string
	for _, c := range ended[0]["changed"].([]any) {
		changed = append(changed, filepath.Base(c.(map[string]any)["path"].(string)))
	}
	slices.Sort(changed)
	if strings.Join(changed, " ") != "a.txt made.txt" {
		t.Fatalf("changed = %v (%v)", changed, ended[0])
	}
	if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
		t.Fatalf("/rewind 1: %s", stop)
	}
	if got := readFile(t, ws, "a.txt"); got != "orig\n" {
		t.Errorf("a.txt after the rewind: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); !os.IsNotExist(err) {
		t.Errorf("made.txt is still there after the rewind: %v", err)
	}
}

// bridle's exit (the editor closes its stdin) stops a command in the
// background and records its end.
func TestBackgroundCommandStoppedOnExit(t *testing.T) {
	marker := fmt.Sprintf("bridle-bg-exit-%d", os.Getpid())
	a, sid, _ := serve(t, acptest.Options{Model: acptest.Scenario(t, bgScenario(fmt.Sprintf(`sleep 305 # %s`, marker)))}, nil)
	waitFor(t, func() bool { return processesWith(marker) == 1 })
	if code := a.CloseStdin(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if n := processesWith(marker); n != 0 {
		t.Errorf("%d processes left after bridle's exit", n)
	}
	ended := eventsOf(acptest.Log(t, a.DB, sid), "command_finished")
	if len(ended) != 1 || ended[0]["status"] != "stopped" || !strings.Contains(ended[0]["summary"].(string), "the session ended") {
		t.Fatalf("command_finished: %v", ended)
	}
}

// In ask mode, starting a command in the background asks as any command
// does, and so does writing to its input; reading its output and stopping
// it do not. The question names it as a command in the background.
func TestBackgroundCommandApprovals(t *testing.T) {
	scenario := bgScenario(`read l; echo "got $l"`,
		rawToolCall("command_output", `{"id": "bg1"}`),
		rawToolCall("command_input", `{"id": "bg1", "text": "yes\n"}`),
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
		rawToolCall("command_stop", `{"id": "bg1"}`),
	)
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	an := &answerer{answers: []string{"allow_once", "allow_once"}}
	a.OnRequest = an.handle
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "serve"); stop != "end_turn" {
		t.Fatalf("stop reason %q; stderr:\n%s", stop, a.Stderr())
	}
	if an.count() != 2 {
		t.Fatalf("asked %d times, want 2 (the start and the input): %v", an.count(), an.asked)
	}
	first := an.asked[0]["toolCall"].(map[string]any)
	if !strings.Contains(fmt.Sprint(first["title"]), "(in the background)") {
		t.Errorf("the start's question: %v", first)
	}
	second := an.asked[1]["toolCall"].(map[string]any)
	if !strings.Contains(fmt.Sprint(second["title"]), `Write "yes\n" to bg1`) {
		t.Errorf("the input's question: %v", second)
	}
	res := toolResults(t, a.DB, sid)
	if len(res) != 5 || !strings.Contains(res[3]["output"].(string), "got yes") {
		t.Fatalf("results: %v", res)
	}
	a.AssertValid(t)
}

// "Allow for this session" on a write to one background command's input
// covers that command only: a second command (a shell reads any line as a
// command) is asked about again, and its option names the command.
func TestBackgroundInputAllowedForOneCommand(t *testing.T) {
	echo := `while read l; do echo "got $l"; done`
	scenario := bgScenario(echo,
		rawToolCall("run_command", fmt.Sprintf(`{"command": %q, "background": true}`, echo)),
		rawToolCall("command_input", `{"id": "bg1", "text": "a\n"}`),
		rawToolCall("command_input", `{"id": "bg1", "text": "b\n"}`),
		rawToolCall("command_input", `{"id": "bg2", "text": "c\n"}`),
		rawToolCall("command_stop", `{"id": "bg1"}`),
		rawToolCall("command_stop", `{"id": "bg2"}`),
	)
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	an := &answerer{answers: []string{"allow_once", "allow_once", "allow_always", "allow_once"}}
	a.OnRequest = an.handle
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "serve"); stop != "end_turn" {
		t.Fatalf("stop reason %q; stderr:\n%s", stop, a.Stderr())
	}
	var titles []string
	for _, q := range an.asked {
		titles = append(titles, fmt.Sprint(q["toolCall"].(map[string]any)["title"]))
	}
	if an.count() != 4 || !strings.Contains(titles[3], "to bg2") {
		t.Fatalf("asked %d times, want 4 (two starts, bg1's first input, bg2's input): %q", an.count(), titles)
	}
	opts := fmt.Sprint(an.asked[2]["options"])
	if !strings.Contains(opts, "bg1 (`"+echo+"`) for this session") {
		t.Errorf("the session-wide option does not name the command: %s", opts)
	}
	res := toolResults(t, a.DB, sid)
	if len(res) != 7 {
		t.Fatalf("%d results, want 7: %v", len(res), res)
	}
	for i, want := range map[int]string{2: "wrote 2 bytes to bg1", 3: "wrote 2 bytes to bg1", 4: "wrote 2 bytes to bg2"} {
		if out, _ := res[i]["output"].(string); res[i]["status"] != "completed" || !strings.Contains(out, want) {
			t.Errorf("result %d: %v %q, want %q", i, res[i]["status"], out, want)
		}
	}
	a.AssertValid(t)
}

// procStart is a process's start time (field 22 of /proc/PID/stat).
func procStart(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[19]
}

// The box of a command in the background is recorded in bridle's data
// directory while it runs. A bridle opening the session after one that
// died kills a box its record names when that very process still runs
// (the same pid, start time and boot), and leaves alone a process that
// has the pid but not the start time (a pid used again). Two stand-ins
// play the boxes: the real ones died with the killed bridle.
func TestBackgroundRecoveryKillsOnlyTheRecordedBox(t *testing.T) {
	start := `{"name": "run_command", "input": {"command": "sleep 306", "background": true}}`
	scenario := `{"turns": [{"calls": [{"tool_calls": [` + start + `, ` + start + `]}, {"text": "done"}]}, {"calls": [{"text": "again"}]}]}`
	model := acptest.Scenario(t, scenario)
	a, sid, ws := serve(t, acptest.Options{Model: model}, nil)
	dir := filepath.Join(filepath.Dir(a.DB), "background", sid)
	var records []string
	waitFor(t, func() bool {
		records, _ = filepath.Glob(filepath.Join(dir, "*"))
		return len(records) == 2
	})
	slices.Sort(records)
	for _, r := range records {
		b, _ := os.ReadFile(r)
		if parts := strings.Split(string(b), "@"); len(parts) != 3 || parts[1] == "" {
			t.Fatalf("record %s = %q", r, b)
		}
	}
	a.Signal(syscall.SIGKILL)
	a.WaitExit()

	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	standIn := func() *exec.Cmd {
		c := exec.Command("sleep", "307")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	box, stranger := standIn(), standIn()
	write := func(path string, pid int, start string) {
		if err := os.WriteFile(path, []byte(fmt.Sprintf("%d@%s@%s", pid, start, strings.TrimSpace(string(boot)))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(records[0], box.Process.Pid, procStart(t, box.Process.Pid))
	write(records[1], stranger.Process.Pid, "1") // the pid, not its start time
	waited := make(chan error, 1)
	go func() { waited <- box.Wait() }()

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	if err := <-waited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the recorded box: %v", err)
	}
	if err := stranger.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process with the recorded pid but another start time was killed: %v", err)
	}
	ended := eventsOf(acptest.Log(t, b.DB, sid), "command_finished")
	if len(ended) != 2 {
		t.Fatalf("command_finished: %v", ended)
	}
	var killed int
	for _, e := range ended {
		if e["status"] != "unknown" {
			t.Errorf("status %v", e)
		}
		if strings.Contains(e["summary"].(string), "was still running, and was killed now") {
			killed++
		}
	}
	if killed != 1 {
		t.Errorf("%d said killed now, want 1: %v", killed, ended)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("records left: %v", left)
	}
}

// session/close and session/delete stop the session's commands in the
// background, whole; a close records their end.
func TestBackgroundCommandStoppedByCloseAndDelete(t *testing.T) {
	for _, method := range []string{"session/close", "session/delete"} {
		t.Run(method, func(t *testing.T) {
			marker := fmt.Sprintf("bridle-bg-%s-%d", strings.TrimPrefix(method, "session/"), os.Getpid())
			command := fmt.Sprintf(`sh -c 'sleep 308 # %[1]s-child' & sleep 309 # %[1]s`, marker)
			a, sid, _ := serve(t, acptest.Options{Model: acptest.Scenario(t, bgScenario(command))}, nil)
			waitFor(t, func() bool { return processesWith(marker) == 2 })
			a.MustCall(method, map[string]any{"sessionId": sid}, nil)
			if n := processesWith(marker); n != 0 {
				t.Errorf("%d processes left after %s", n, method)
			}
			if method == "session/close" {
				ended := eventsOf(acptest.Log(t, a.DB, sid), "command_finished")
				if len(ended) != 1 || ended[0]["status"] != "stopped" {
					t.Errorf("command_finished: %v", ended)
				}
			}
		})
	}
}
