package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/testfs"
)

func skillFile(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body + "\n"
}

// skillsScenario loads the project's skill, then a file beside it.
const skillsScenario = `{"turns": [
	{"match": "USE-SKILL", "calls": [
		{"tool_calls": [{"name": "skill", "input": {"name": "lint-rules"}}]},
		{"tool_calls": [{"name": "skill", "input": {"name": "lint-rules", "file": "references/style.md"}}]},
		{"text": "skill used"}]},
	{"match": "RUN-SCRIPT", "calls": [
		{"tool_calls": [{"name": "run_command", "input": {"command": "sh .agents/skills/lint-rules/scripts/check.sh"}}]},
		{"text": "script asked"}]},
	{"calls": [{"text": "ok"}]}
]}`

// requestText is everything a recorded model request says: its system
// blocks (the fixed prefix), its tools' names and its messages.
func requestTexts(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no recorded requests: %v", err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			System []struct {
				Text string `json:"text"`
			} `json:"system"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("a recorded request is not JSON: %v", err)
		}
		var sys strings.Builder
		for _, b := range r.System {
			sys.WriteString(b.Text + "\n")
		}
		out = append(out, "SYSTEM:\n"+sys.String()+"\nWHOLE:\n"+line)
	}
	return out
}

// TestSkillsThroughTheBinary: the user's and the project's skills are
// found; their names and descriptions are in the first request's fixed
// prefix (the system blocks), with the skill tool; the model loads a
// body, then a file beside it, with the tool. A malformed skill is told
// to the user once and left out; a hostile repository's skills (a link
// to ~/.ssh, a link out of the project, a named pipe, a huge SKILL.md)
// neither hang the session nor reach the model. /skills lists the
// skills as the user's or the project's.
func TestSkillsThroughTheBinary(t *testing.T) {
	home, outside := t.TempDir(), t.TempDir()
	testfs.WriteTree(t, home, map[string]string{
		".agents/skills/user-notes/SKILL.md":          skillFile("user-notes", "USER-SKILL-DESC keeps notes.", "USER-BODY"),
		".config/bridle/skills/deploy-steps/SKILL.md": skillFile("deploy-steps", "DEPLOY-DESC deploys.", "DEPLOY-BODY"),
		".ssh/SKILL.md": skillFile("ssh", "SSH-SECRET-DESC", "SSH-SECRET-BODY"),
	})
	testfs.WriteTree(t, outside, map[string]string{"away/SKILL.md": skillFile("away", "OUTSIDE-SECRET-DESC", "OUTSIDE-BODY")})
	ws := acptest.Workspace(t, map[string]string{
		".agents/skills/lint-rules/SKILL.md":            skillFile("lint-rules", "LINT-DESC, the house style rules; use before editing Go.", "LINT-BODY: tabs, short names.\nSee references/style.md.\nThe key is zq-very-secret-4471."),
		".env":                                          "DEPLOY_TOKEN=zq-very-secret-4471\n",
		".agents/skills/leaky/SKILL.md":                 skillFile("leaky", "LEAKY-DESC uses zq-very-secret-4471 to deploy.", "body"),
		".agents/skills/lint-rules/references/style.md": "STYLE-REFERENCE-TEXT",
		".agents/skills/lint-rules/scripts/check.sh":    "touch ran.txt\n",
		".agents/skills/broken/SKILL.md":                skillFile("Broken_Name", "BROKEN-DESC", "BROKEN-BODY"),
		".agents/skills/no-front/SKILL.md":              "NO-FRONT-BODY",
		".bridle/skills/huge/SKILL.md":                  skillFile("huge", "HUGE-DESC", strings.Repeat("HUGE-TEXT ", 20000)),
		".bridle/skills/pipe/.keep":                     "",
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(ws, ".agents/skills/ssh")))
	must(os.Symlink(filepath.Join(outside, "away"), filepath.Join(ws, ".agents/skills/away")))
	must(mkfifo(filepath.Join(ws, ".bridle/skills/pipe/SKILL.md")))

	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Home: home, Model: acptest.Scenario(t, skillsScenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	var mu sync.Mutex
	var asked []string
	a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, string(m.Params))
		return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
	}
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "USE-SKILL please"); stop != "end_turn" {
		t.Fatalf("the prompt ended %q", stop)
	}
	reqs := requestTexts(t, requests)
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (the prompt, the body, the file)", len(reqs))
	}
	first := reqs[0]
	sys := first[:strings.Index(first, "\nWHOLE:\n")]
	for _, want := range []string{"lint-rules (project's): LINT-DESC, the house style", "user-notes (user's): USER-SKILL-DESC", "deploy-steps (user's): DEPLOY-DESC"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the first request's fixed prefix lacks %q:\n%s", want, sys)
		}
	}
	if !strings.Contains(first, `"name":"skill"`) {
		t.Errorf("the first request offers no skill tool")
	}
	if strings.Contains(first, "LINT-BODY") {
		t.Errorf("a skill's body is in the first request: it must wait for the model to load it")
	}
	if !strings.Contains(reqs[1], "LINT-BODY: tabs, short names.") || !strings.Contains(reqs[1], "references/style.md") {
		t.Errorf("the skill's body (and its files) are not in the request after the skill call:\n%s", reqs[1])
	}
	if !strings.Contains(reqs[2], "STYLE-REFERENCE-TEXT") {
		t.Errorf("the skill's file is not in the request after it was read")
	}
	if !strings.HasPrefix(reqs[2], sys) {
		t.Errorf("the fixed prefix changed between the turn's requests")
	}
	all := strings.Join(reqs, "\n")
	if !strings.Contains(sys, "leaky (project's): LEAKY-DESC") {
		t.Errorf("the skill whose description holds a secret is not catalogued:\n%s", sys)
	}
	for _, leak := range []string{"zq-very-secret-4471", "SSH-SECRET", "OUTSIDE-SECRET", "OUTSIDE-BODY", "HUGE-TEXT", "HUGE-DESC", "BROKEN-DESC", "NO-FRONT-BODY"} {
		if strings.Contains(all, leak) {
			t.Errorf("the model was sent %q, from a skill that must not be used", leak)
		}
	}

	// Each skill not used is told once, saying why.
	var notices strings.Builder
	for _, u := range a.Updates(sid) {
		if u.Kind == "agent_message_chunk" {
			notices.WriteString(u.Text)
		}
	}
	for _, want := range []string{
		"skills/broken/SKILL.md is not used: the name \"Broken_Name\"",
		"skills/no-front/SKILL.md is not used: no front matter",
		"skills/huge is not used",
		"skills/pipe is not used",
		"named pipe",
		"skills/ssh is not used",
		"skills/away is not used",
	} {
		if n := strings.Count(notices.String(), want); n != 1 {
			t.Errorf("the user was told %d times (want once) %q; told:\n%s", n, want, notices.String())
		}
	}

	// A second prompt: nothing is told again.
	before := len(a.Updates(sid))
	a.Prompt(sid, "again")
	for _, u := range a.Updates(sid)[before:] {
		if u.Kind == "agent_message_chunk" && strings.Contains(u.Text, "not used") {
			t.Errorf("a problem was told again: %q", u.Text)
		}
	}

	// A skill is text, never a permission: its script is a command like
	// any other, which the session's mode (ask) asks about.
	a.Prompt(sid, "RUN-SCRIPT")
	mu.Lock()
	got := slices.Clone(asked)
	mu.Unlock()
	if len(got) != 1 || !strings.Contains(got[0], "check.sh") {
		t.Errorf("the skill's script was not asked about as a command: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
		t.Errorf("the skill's script ran although the user said no")
	}

	// /skills lists them, whose each is; nothing is recorded.
	kinds := acptest.Kinds(acptest.Log(t, a.DB, sid))
	before = len(a.Updates(sid))
	if stop := a.Prompt(sid, "/skills"); stop != "end_turn" {
		t.Fatalf("/skills ended %q", stop)
	}
	var listed strings.Builder
	for _, u := range a.Updates(sid)[before:] {
		listed.WriteString(u.Text)
	}
	for _, want := range []string{"lint-rules — the project's, " + filepath.Join(ws, ".agents/skills/lint-rules"), "user-notes — the user's", "Not used:", "Broken_Name"} {
		if !strings.Contains(listed.String(), want) {
			t.Errorf("/skills lacks %q:\n%s", want, listed.String())
		}
	}
	if got := acptest.Kinds(acptest.Log(t, a.DB, sid)); got != kinds {
		t.Errorf("/skills was recorded: %s → %s", kinds, got)
	}
	a.AssertValid(t)

	// bridle doctor, in the project, says the same.
	doctor := exec.Command(acptest.Binary(t), "doctor")
	doctor.Dir = ws
	doctor.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=", "BRIDLE_DB="+a.DB)
	out, err := doctor.CombinedOutput()
	for _, want := range []string{"lint-rules — the project's, " + filepath.Join(ws, ".agents/skills/lint-rules"), "user-notes — the user's", "skills/ssh is not used", "skills/pipe is not used"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("bridle doctor (%v) lacks %q:\n%s", err, want, out)
		}
	}
}
