package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// cliScenario answers one turn: a read that fails (the file does not
// exist), then a sentence.
const cliScenario = `{"name":"cli","sequential":false,"turns":[{"calls":[
	{"text":"Looking.","tool_calls":[{"name":"read_file","input":{"path":"missing.txt"}}]},
	{"text":"The answer is 42."}]}]}`

// runCLI runs the binary with args and returns stdout and stderr apart.
func runCLI(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runCLIIn(t, "", env, args...)
}

// runCLIIn is runCLI in the directory dir ("": the test's).
func runCLIIn(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(acptest.Binary(t), args...)
	cmd.Dir, cmd.Env = dir, append(cmd.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

type cliSession struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title"`
	Mode      string `json:"mode"`
	Model     string `json:"model"`
}

func sessionsOf(t *testing.T, db string) []cliSession {
	t.Helper()
	out, errs, err := runCLI(t, nil, "sessions", "--db", db, "--json")
	if err != nil {
		t.Fatalf("bridle sessions: %v\n%s", err, errs)
	}
	var list []cliSession
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var s cliSession
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("sessions --json printed %q: %v", line, err)
		}
		list = append(list, s)
	}
	return list
}

// TestCLIRunFlagsAnywhere runs `bridle run` in every form the README and
// `bridle --help` write it: flags before the prompt, after it (the
// README's own form), between the words, with = or a separate value, and
// the global flags before or after the subcommand. Each must run in --cwd,
// in --mode, with --model and --db, and title the session with the prompt
// alone.
func TestCLIRunFlagsAnywhere(t *testing.T) {
	model := acptest.Scenario(t, cliScenario)
	forms := []struct {
		name string
		args func(db, dir string) []string
	}{
		{"readme", func(db, dir string) []string {
			return []string{"run", "What is the answer?", "--cwd", dir, "--mode", "read-only", "--db", db, "--model", model}
		}},
		{"flags first", func(db, dir string) []string {
			return []string{"run", "--cwd", dir, "--mode", "read-only", "--db", db, "--model", model, "What is the answer?"}
		}},
		{"globals before the command", func(db, dir string) []string {
			return []string{"--db", db, "--model", model, "run", "What is the answer?", "--cwd", dir, "--mode", "read-only"}
		}},
		{"equals and mixed", func(db, dir string) []string {
			return []string{"run", "--mode=read-only", "What", "is", "--cwd=" + dir, "the answer?", "--db=" + db, "--model=" + model}
		}},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "bridle.db")
			dir := acptest.Workspace(t, map[string]string{"a.txt": "a"})
			out, errs, err := runCLI(t, nil, f.args(db, dir)...)
			if err != nil {
				t.Fatalf("bridle run: %v\nstdout: %s\nstderr: %s", err, out, errs)
			}
			if !strings.Contains(out, "The answer is 42.") {
				t.Errorf("stdout lacks the answer: %q", out)
			}
			list := sessionsOf(t, db)
			if len(list) != 1 {
				t.Fatalf("want one session, got %+v", list)
			}
			s := list[0]
			if s.Cwd != dir || s.Mode != "read-only" || s.Model != model || s.Title != "What is the answer?" {
				t.Errorf("session = %+v; want cwd %s, mode read-only, model %s, title %q", s, dir, model, "What is the answer?")
			}
		})
	}
}

// TestCLIRunFailedToolTitle checks that a failed tool call prints with its
// title on stderr, not as "[ failed]".
func TestCLIRunFailedToolTitle(t *testing.T) {
	model := acptest.Scenario(t, cliScenario)
	db := filepath.Join(t.TempDir(), "bridle.db")
	dir := acptest.Workspace(t, nil)
	_, errs, err := runCLI(t, nil, "run", "--db", db, "--model", model, "--cwd", dir, "What is the answer?")
	if err != nil {
		t.Fatalf("bridle run: %v\n%s", err, errs)
	}
	if strings.Contains(errs, "[ failed]") || !strings.Contains(errs, "missing.txt failed]") {
		t.Errorf("the failed read is not named on stderr:\n%s", errs)
	}
}

// TestCLIFlagsAnywhere runs the other subcommands in each documented form,
// with their flags before and after their arguments.
func TestCLIFlagsAnywhere(t *testing.T) {
	model := acptest.Scenario(t, cliScenario)
	db := filepath.Join(t.TempDir(), "bridle.db")
	dir := acptest.Workspace(t, nil)
	if out, errs, err := runCLI(t, nil, "run", "What is the answer?", "--db", db, "--model", model, "--cwd", dir, "--mode", "read-only"); err != nil {
		t.Fatalf("bridle run: %v\n%s%s", err, out, errs)
	}
	list := sessionsOf(t, db)
	if len(list) != 1 {
		t.Fatalf("want one session, got %+v", list)
	}
	sid := list[0].SessionID
	isJSON := func(out string) bool {
		line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
		return json.Valid([]byte(line)) || json.Valid([]byte(out))
	}
	cases := []struct {
		args  []string
		check func(out string) bool
	}{
		{[]string{"sessions", "--db", db}, func(o string) bool { return strings.Contains(o, "SESSION") && strings.Contains(o, sid) }},
		{[]string{"--db", db, "sessions", "--json"}, func(o string) bool { return isJSON(o) && strings.Contains(o, sid) }},
		{[]string{"sessions", "--json", "--db", db}, func(o string) bool { return isJSON(o) && strings.Contains(o, sid) }},
		{[]string{"log", sid, "--db", db}, func(o string) bool { return strings.Contains(o, "SEQ") && strings.Contains(o, "session_started") }},
		{[]string{"log", sid, "--json", "--db", db}, func(o string) bool { return isJSON(o) && strings.Contains(o, "session_started") }},
		{[]string{"log", "--db", db, "--json", sid}, func(o string) bool { return isJSON(o) && strings.Contains(o, "session_started") }},
		{[]string{"log", "--context", sid, "--db", db}, func(o string) bool { return strings.Contains(o, "WINDOW") }},
		{[]string{"log", "--context", sid, "--json", "--db", db}, func(o string) bool { return isJSON(o) && strings.Contains(o, `"window"`) }},
		{[]string{"log", sid, "--context", "--db", db}, func(o string) bool { return strings.Contains(o, "WINDOW") }},
		{[]string{"doctor", "--json"}, func(o string) bool { return isJSON(o) }},
		{[]string{"doctor"}, func(o string) bool { return strings.Contains(o, "sandbox layers") }},
		{[]string{"--version"}, func(o string) bool { return strings.HasPrefix(o, "bridle ") }},
		{[]string{"help"}, func(o string) bool { return strings.Contains(o, "Usage:") }},
		{[]string{"--help"}, func(o string) bool { return true }},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out, errs, err := runCLI(t, nil, c.args...)
			if err != nil {
				t.Fatalf("bridle %v: %v\nstdout: %s\nstderr: %s", c.args, err, out, errs)
			}
			if !c.check(out) {
				t.Errorf("bridle %v printed:\n%s\nstderr: %s", c.args, out, errs)
			}
		})
	}
	// Serve's form, `bridle [--db PATH] [--model M]`, and with the command
	// named: both take the flags and answer on stdio.
	for _, args := range [][]string{{"--db", db, "--model", model}, {"serve", "--db", db, "--model", model}} {
		a := acptest.Start(t, acptest.Options{DB: filepath.Join(t.TempDir(), "other.db"), Args: args})
		a.Initialize()
		a.NewSession(dir)
		if a.CloseStdin() != 0 {
			t.Errorf("bridle %v did not exit cleanly:\n%s", args, a.Stderr())
		}
		if n := len(sessionsOf(t, db)); n < 2 {
			t.Errorf("bridle %v did not use --db %s: %d sessions there", args, db, n)
		}
	}
	// Unknown flags and arguments are still refused.
	for _, args := range [][]string{{"run", "--nope", "x"}, {"doctor", "extra"}, {"sessions", "extra"}, {"log"}, {"serve", "extra"}, {"demo", "extra"}} {
		if out, errs, err := runCLI(t, []string{"BRIDLE_DB=" + db}, args...); err == nil {
			t.Errorf("bridle %v succeeded:\n%s%s", args, out, errs)
		}
	}
}

// TestCLIDemo runs the README's first command.
func TestCLIDemo(t *testing.T) {
	out, errs, err := runCLI(t, []string{"TMPDIR=" + t.TempDir()}, "demo")
	if err != nil {
		t.Fatalf("bridle demo: %v\n%s\n%s", err, out, errs)
	}
	for _, want := range []string{"you › What does this project do?", "greeting()", "turn ended: end_turn", "session_started", "\n  bridle log --db"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// TestCLIRunSharesTheStack: `bridle run` builds its session manager as
// serve does, with the fault hook (it had none): BRIDLE_FAULT=event:2
// kills it after its second committed event, and the log keeps two.
func TestCLIRunSharesTheStack(t *testing.T) {
	model := acptest.Scenario(t, cliScenario)
	db := filepath.Join(t.TempDir(), "bridle.db")
	_, errs, err := runCLI(t, []string{"BRIDLE_FAULT=event:2"}, "run", "What is the answer?", "--db", db, "--model", model, "--cwd", acptest.Workspace(t, nil))
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("bridle run with BRIDLE_FAULT=event:2 was not killed: %v\n%s", err, errs)
	}
	list := sessionsOf(t, db)
	if len(list) != 1 {
		t.Fatalf("want one session, got %+v", list)
	}
	if events := acptest.Log(t, db, list[0].SessionID); len(events) != 2 {
		t.Errorf("want the log cut after 2 events, got %s", acptest.Kinds(events))
	}
	if _, errs, err := runCLI(t, []string{"BRIDLE_FAULT=bogus"}, "run", "x", "--db", db, "--model", model); err == nil || !strings.Contains(errs, "BRIDLE_FAULT") {
		t.Errorf("a bad BRIDLE_FAULT was not refused: %v\n%s", err, errs)
	}
}
