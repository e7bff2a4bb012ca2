package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// headlessScenario thinks, says something, makes a plan, runs two
// commands (one an --allow pattern covers, one it does not) and ends.
const headlessScenario = `{"name":"headless","turns":[{"calls":[
	{"thinking":"Let me check.","text":"Running the tests.","usage":{"input_tokens":100,"output_tokens":20},"tool_calls":[
		{"name":"plan","input":{"entries":[{"content":"run the tests","status":"in_progress"}]}},
		{"name":"run_command","input":{"command":"touch allowed.txt"}},
		{"name":"run_command","input":{"command":"touch refused.txt"}}]},
	{"text":"Done.","usage":{"input_tokens":150,"output_tokens":5}}]}]}`

// runHeadless runs `bridle run` with stdin and returns stdout, stderr and
// the exit code.
func runHeadless(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(acptest.Binary(t), args...)
	cmd.Env = append(cmd.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("bridle %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// jsonLines decodes `bridle run --json`'s stdout, validating each line
// against docs/headless.schema.json (whose update lines are ACP's
// SessionUpdate, from the vendored schema).
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	sch, err := acptest.CompileSchema("docs/headless.schema.json")
	if err != nil {
		t.Fatalf("the schema of --json's lines: %v", err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if err := acptest.ValidateJSON(sch, []byte(l)); err != nil {
			t.Fatalf("line does not match docs/headless.schema.json:\n%s\n%v", l, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	return lines
}

var (
	usageFigures = regexp.MustCompile(`"(size|used)":\d+`)
	callIDs      = regexp.MustCompile(`"call-\d+-(\d+)"`)
)

// normalizeJSON replaces in --json's lines what changes from run to run
// (session id, temporary paths) or with the code around (the context
// window's figures, tool call ids made of event numbers).
func normalizeJSON(out string, dir, model string) string {
	out = normalize(strings.ReplaceAll(out, model, "scripted/SCENARIO"), dir)
	out = usageFigures.ReplaceAllString(out, `"$1":N`)
	return callIDs.ReplaceAllString(out, `"call-N-$1"`)
}

// kindOf names a line: its type, and an update's sessionUpdate.
func kindOf(l map[string]any) string {
	if u, ok := l["update"].(map[string]any); ok {
		return "update:" + u["sessionUpdate"].(string)
	}
	return l["type"].(string)
}

// TestHeadlessJSON runs a turn with --json: the session first, every
// update an editor gets (thinking, text, tool calls and their results,
// the plan, usage), the --allow decision and the refusal, and last the
// result with the stop reason, the usage and the exit code; every line
// matches the documented schema. The allowed command ran, the refused one
// did not, the model was told, and stderr says so in one line.
func TestHeadlessJSON(t *testing.T) {
	model := acptest.Scenario(t, headlessScenario)
	db := filepath.Join(t.TempDir(), "bridle.db")
	dir := acptest.Workspace(t, nil)
	out, errs, code := runHeadless(t, nil, "", "run", "--json", "--allow", "touch allowed.txt", "--db", db, "--model", model, "--cwd", dir, "Run the tests")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (a call was refused)\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	lines := jsonLines(t, out)
	golden(t, "json/headless.jsonl", normalizeJSON(out, dir, model))
	first, last := lines[0], lines[len(lines)-1]
	if first["type"] != "session" || first["model"] != model || first["mode"] != "ask" {
		t.Errorf("first line = %v, want the session", first)
	}
	sid, _ := first["sessionId"].(string)
	if last["type"] != "result" || last["stopReason"] != "end_turn" || last["exit"] != 3.0 || last["sessionId"] != sid {
		t.Errorf("last line = %v, want the result: end_turn, exit 3, session %s", last, sid)
	}
	usage, _ := last["usage"].(map[string]any)
	if usage["inputTokens"] != 250.0 || usage["outputTokens"] != 25.0 {
		t.Errorf("usage = %v, want the turn's two calls added up (250 in, 25 out)", usage)
	}
	seen := map[string]int{}
	for _, l := range lines {
		seen[kindOf(l)]++
		switch l["type"] {
		case "allowed":
			if l["pattern"] != "touch allowed.txt" || l["tool"] != "run_command" {
				t.Errorf("allowed line = %v", l)
			}
		case "refused":
			if l["pattern"] != "touch refused.txt" || l["title"] != "touch refused.txt" {
				t.Errorf("refused line = %v", l)
			}
		}
	}
	for _, want := range []string{"update:session_info_update", "update:agent_thought_chunk", "update:agent_message_chunk",
		"update:tool_call", "update:tool_call_update", "update:plan", "update:usage_update", "allowed", "refused"} {
		if seen[want] == 0 {
			t.Errorf("no %s line in:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "allowed.txt")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "refused.txt")); err == nil {
		t.Error("the refused command ran")
	}
	if n := strings.Count(errs, "bridle: refused"); n != 1 || !strings.Contains(errs, "--allow 'touch refused.txt'") || !strings.Contains(errs, "--mode full-auto") {
		t.Errorf("stderr should say the refusal once, with the pattern and the mode that would run it:\n%s", errs)
	}
	// The model read the refusal as the call's result.
	var told bool
	for _, e := range acptest.Log(t, db, sid) {
		if e["kind"] == "tool_result" && strings.Contains(jsonText(e), "not run: no one is there to approve it (a headless run refuses what needs approval): touch refused.txt") {
			told = true
		}
	}
	if !told {
		t.Error("the log has no result telling the model the call was refused")
	}
}

// answerOf joins the agent_message_chunk texts of --json's lines.
func answerOf(lines []map[string]any) string {
	var b strings.Builder
	for _, l := range lines {
		if u, ok := l["update"].(map[string]any); ok && u["sessionUpdate"] == "agent_message_chunk" {
			b.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	return b.String()
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestHeadlessStdinAndSession reads the prompt from stdin (-) and
// continues the session with --session: one session, two prompts.
func TestHeadlessStdinAndSession(t *testing.T) {
	model := acptest.Scenario(t, `{"name":"two","turns":[{"calls":[{"text":"First answer."}]},{"calls":[{"text":"Second answer."}]}]}`)
	db := filepath.Join(t.TempDir(), "bridle.db")
	dir := acptest.Workspace(t, nil)
	out, errs, code := runHeadless(t, nil, "What is first?\n", "run", "-", "--db", db, "--model", model, "--cwd", dir)
	if code != 0 || strings.TrimSpace(out) != "First answer." {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	list := sessionsOf(t, db)
	if len(list) != 1 || list[0].Title != "What is first?" {
		t.Fatalf("sessions = %+v, want one titled by the prompt from stdin", list)
	}
	out, errs, code = runHeadless(t, nil, "", "run", "--json", "--session", list[0].SessionID, "--db", db, "--model", model, "And then?")
	if code != 0 {
		t.Fatalf("--session: exit %d\n%s\n%s", code, out, errs)
	}
	lines := jsonLines(t, out)
	if lines[0]["sessionId"] != list[0].SessionID {
		t.Errorf("--session ran in %v, want %s", lines[0]["sessionId"], list[0].SessionID)
	}
	if answerOf(lines) != "Second answer." {
		t.Errorf("the second prompt was not answered as the session's second:\n%s", out)
	}
	if n := len(sessionsOf(t, db)); n != 1 {
		t.Errorf("%d sessions, want the one continued", n)
	}
	if kinds := acptest.Kinds(acptest.Log(t, db, list[0].SessionID)); strings.Count(kinds, "user_message") != 2 {
		t.Errorf("log = %s, want two prompts", kinds)
	}
	// An empty stdin is bad input, and so is an unknown session.
	if _, errs, code := runHeadless(t, nil, "", "run", "-", "--db", db, "--model", model); code != 2 || !strings.Contains(errs, "stdin is empty") {
		t.Errorf("empty stdin: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := runHeadless(t, nil, "", "run", "--session", "ses_nope", "--db", db, "--model", model, "hi"); code != 2 || strings.Count(errs, "\n") != 1 {
		t.Errorf("unknown session: exit %d, stderr %q", code, errs)
	}
}

// TestHeadlessExitCodes: each way a turn can end has its documented exit
// code, and --json's result line says the same.
func TestHeadlessExitCodes(t *testing.T) {
	dir := acptest.Workspace(t, nil)
	cases := []struct {
		name     string
		scenario string
		args     []string
		code     int
		stop     string
	}{
		{"success", `{"name":"ok","turns":[{"calls":[{"text":"Fine."}]}]}`, nil, 0, "end_turn"},
		{"refused", `{"name":"no","turns":[{"calls":[{"tool_calls":[{"name":"write_file","input":{"path":"a.txt","content":"x"}}]},{"text":"Could not."}]}]}`, nil, 3, "end_turn"},
		{"max turns", `{"name":"loop","turns":[{"calls":[{"tool_calls":[{"name":"list_dir","input":{"path":"."}}]},{"tool_calls":[{"name":"list_dir","input":{"path":"."}}]},{"text":"Done."}]}]}`, []string{"--max-turns", "2"}, 4, "max_turn_requests"},
		{"provider failure", `{"name":"auth","turns":[{"calls":[{"fail":{"after_chunks":0,"kind":"auth","status":401,"message":"the key was refused"}}]}]}`, nil, 1, ""},
		{"bad mode", `{"name":"ok","turns":[{"calls":[{"text":"Fine."}]}]}`, []string{"--mode", "yolo"}, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model := acptest.Scenario(t, c.scenario)
			db := filepath.Join(t.TempDir(), "bridle.db")
			args := append([]string{"run", "--json", "--db", db, "--model", model, "--cwd", dir}, c.args...)
			out, errs, code := runHeadless(t, nil, "", append(args, "Go.")...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			lines := jsonLines(t, out)
			last := lines[len(lines)-1]
			if last["type"] != "result" || last["exit"] != float64(c.code) || last["stopReason"] != c.stop {
				t.Errorf("last line = %v, want exit %d, stop %q", last, c.code, c.stop)
			}
		})
	}
}

// TestHeadlessCancel: SIGINT while a command runs cancels the turn; the
// run exits 130 with the result line saying cancelled.
func TestHeadlessCancel(t *testing.T) {
	model := acptest.Scenario(t, `{"name":"slow","turns":[{"calls":[{"tool_calls":[{"name":"run_command","input":{"command":"sleep 60"}}]},{"text":"Slept."}]}]}`)
	db := filepath.Join(t.TempDir(), "bridle.db")
	dir := acptest.Workspace(t, nil)
	cmd := exec.Command(acptest.Binary(t), "run", "--json", "--mode", "full-auto", "--db", db, "--model", model, "--cwd", dir, "Sleep.")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stdout)
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), `"status":"in_progress"`) {
			break // the command runs
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	out.Write(rest)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	lines := jsonLines(t, out.String())
	if last := lines[len(lines)-1]; last["stopReason"] != "cancelled" || last["exit"] != 130.0 {
		t.Errorf("last line = %v, want cancelled, exit 130", last)
	}
}

// TestHeadlessQuietAndProgress: --quiet leaves stderr empty; --progress
// says what bridle waits for, and a provider nothing listens at is tried
// twice, said, and fails with exit 1 in about a second, not 11–14.
func TestHeadlessQuietAndProgress(t *testing.T) {
	model := acptest.Scenario(t, `{"name":"ok","turns":[{"calls":[{"tool_calls":[{"name":"list_dir","input":{"path":"."}}]},{"text":"Fine."}]}]}`)
	dir := acptest.Workspace(t, nil)
	out, errs, code := runHeadless(t, nil, "", "run", "--quiet", "--db", filepath.Join(t.TempDir(), "q.db"), "--model", model, "--cwd", dir, "Go.")
	if code != 0 || errs != "" || strings.TrimSpace(out) != "Fine." {
		t.Errorf("--quiet: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	_, errs, code = runHeadless(t, nil, "", "run", "--progress", "--db", filepath.Join(t.TempDir(), "p.db"), "--model", model, "--cwd", dir, "Go.")
	if code != 0 || strings.Count(errs, "waiting for the model") != 2 {
		t.Errorf("--progress: exit %d, want two waits (before each model call) on stderr:\n%s", code, errs)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	env := []string{"OPENAI_BASE_URL=http://" + addr + "/v1", "OPENAI_API_KEY=test-key", "XDG_CONFIG_HOME=" + t.TempDir()}
	start := time.Now()
	out, errs, code = runHeadless(t, env, "", "run", "--progress", "--db", filepath.Join(t.TempDir(), "n.db"), "--model", "openai/gpt-5", "--cwd", dir, "Go.")
	took := time.Since(start)
	if code != 1 || out != "" {
		t.Errorf("no server: exit %d, stdout %q; want 1 and nothing on stdout", code, out)
	}
	if strings.Count(errs, "retrying in") != 1 || !strings.Contains(errs, "nothing is listening at") || strings.Count(errs, "\nbridle: openai") > 1 {
		t.Errorf("no server: stderr should say the retry once and the failure once:\n%s", errs)
	}
	t.Logf("no server: failed after %s", took)
}

// TestHeadlessDocScenario plays the scenario docs/headless.md shows, so
// that the documented format stays the one the scripted model reads.
func TestHeadlessDocScenario(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(acptest.Root(), "docs", "headless.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## Offline tests")
	_, block, ok2 := strings.Cut(after, "```json\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/headless.md has no json block under \"## Offline tests\"")
	}
	model := acptest.Scenario(t, block)
	dir := acptest.Workspace(t, map[string]string{"main.go": "package main\n"})
	out, errs, code := runHeadless(t, nil, "", "run", "--json", "--db", filepath.Join(t.TempDir(), "b.db"), "--model", model, "--cwd", dir, "Look around")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines := jsonLines(t, out)
	if got := answerOf(lines); got != "Listing the workspace.The workspace holds the project. Done." {
		t.Errorf("answer = %q", got)
	}
}

// TestHeadlessSecretCommand: a command holding a secret is shown, refused
// and reported redacted; stdout and stderr never carry the secret, and an
// --allow naming it does not match the redacted command, so it is refused.
func TestHeadlessSecretCommand(t *testing.T) {
	const secret = "ghp_Zy7Lq2Wx9Kd4Mv8Tr3Bn6Pf1Hs5Jc0Ga4Ue"
	model := acptest.Scenario(t, `{"name":"s","turns":[{"calls":[{"tool_calls":[{"name":"run_command","input":{"command":"curl -H 'Authorization: token `+secret+`' https://example.com"}}]},{"text":"Done."}]}]}`)
	out, errs, code := runHeadless(t, nil, "", "run", "--json", "--allow", "curl -H 'Authorization: token "+secret+"' https://example.com",
		"--db", filepath.Join(t.TempDir(), "b.db"), "--model", model, "--cwd", acptest.Workspace(t, nil), "Fetch it.")
	if code != 3 {
		t.Errorf("exit %d, want 3 (refused)\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out+errs, secret[8:24]) {
		t.Errorf("the secret reached stdout or stderr:\n%s\n%s", out, errs)
	}
	if !strings.Contains(errs, "it holds a secret, so no --allow pattern but '*' covers it") {
		t.Errorf("stderr does not say why no pattern covers it:\n%s", errs)
	}
	jsonLines(t, out)
	// The redacted form is no pattern either: its marker would stand for
	// any token of that kind.
	out, errs, code = runHeadless(t, nil, "", "run", "--json", "--allow", "curl -H 'Authorization: token [REDACTED:github-token]' https://example.com",
		"--db", filepath.Join(t.TempDir(), "b.db"), "--model", model, "--cwd", acptest.Workspace(t, nil), "Fetch it.")
	if code != 3 {
		t.Errorf("with the redacted command allowed: exit %d, want 3 (refused)\n%s\n%s", code, out, errs)
	}
}

// TestHeadlessAllowPatterns: each kind of --allow pattern lets the call
// it covers run, through the binary: a background command's input
// (input:bg1) and a directory's files (docs/**); the calls' effects are
// checked, not only the exit code.
func TestHeadlessAllowPatterns(t *testing.T) {
	for _, tc := range []struct {
		name, scenario string
		args           []string
		check          func(t *testing.T, ws, out string)
	}{
		{"input", `{"name":"i","turns":[{"calls":[
			{"tool_calls":[{"name":"run_command","input":{"command":"read l; echo \"got $l\" > got.txt","background":true}}]},
			{"tool_calls":[{"name":"command_input","input":{"id":"bg1","text":"hello\n"}}]},
			{"tool_calls":[{"name":"command_output","input":{"id":"bg1","wait_seconds":30}}]},
			{"text":"Done."}]}]}`,
			[]string{"--mode", "auto-edit", "--allow", `read l; echo "got $l" > got.txt`, "--allow", "input:bg1"},
			func(t *testing.T, ws, out string) {
				if b, _ := os.ReadFile(filepath.Join(ws, "got.txt")); string(b) != "got hello\n" {
					t.Errorf("got.txt = %q: the input did not reach the command", b)
				}
			}},
		{"directory", `{"name":"d","turns":[{"calls":[
			{"tool_calls":[{"name":"write_file","input":{"path":"docs/a.md","content":"# A\n"}}]},
			{"text":"Done."}]}]}`,
			[]string{"--allow", "docs/**"},
			func(t *testing.T, ws, out string) {
				if b, _ := os.ReadFile(filepath.Join(ws, "docs", "a.md")); string(b) != "# A\n" {
					t.Errorf("docs/a.md = %q", b)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := acptest.Workspace(t, map[string]string{"docs/keep.md": "keep\n"})
			args := append([]string{"run", "--json", "--db", filepath.Join(t.TempDir(), "b.db"), "--model", acptest.Scenario(t, tc.scenario), "--cwd", ws}, tc.args...)
			out, errs, code := runHeadless(t, nil, "", append(args, "Go.")...)
			if code != 0 {
				t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
			}
			allowed := 0
			for _, l := range jsonLines(t, out) {
				if l["type"] == "allowed" {
					allowed++
				}
			}
			if allowed == 0 {
				t.Errorf("no call was allowed by a pattern:\n%s", out)
			}
			tc.check(t, ws, out)
		})
	}
}
