package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/lsptest"
)

// nodeSDK returns e2e/node once Node 20 or later and the ACP SDK are
// there, or fails saying in one line what to run first.
func nodeSDK(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(acptest.Root(), "e2e", "node")
	out, err := exec.Command("node", "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("these tests need Node 20 or later (node: %v): install it, then run `make test` (or `npm ci` in %s)", err, dir)
	}
	version := strings.TrimSpace(string(out))
	if major, _, _ := strings.Cut(version, "."); atoi(major) < 20 {
		t.Fatalf("these tests need Node 20 or later, not %s: install a newer one, then run `make test` (or `npm ci` in %s)", version, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		t.Fatalf("the ACP SDK is not installed: run `make test` (or `npm ci` in %s) first", dir)
	}
	return dir
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// runNodeClient runs script (in dir, e2e/node) against the binary with
// ws, env added to the environment, and returns what it printed; the
// test fails with its output when it fails.
func runNodeClient(t *testing.T, dir, script, ws string, env ...string) []byte {
	t.Helper()
	cmd := exec.Command("node", script, acptest.Binary(t), ws)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client: %v\n%s\n%s", err, out, stderr)
	}
	return out
}

// A client written with the official ACP TypeScript SDK completes
// initialize → session/new → prompt → cancel → load against the binary.
func TestTypeScriptSDKClient(t *testing.T) {
	dir := nodeSDK(t)
	const scenario = `{"turns": [
		{"calls": [
			{"text": "Reading.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
			{"text": "They say hello."}
		]},
		{"calls": [{"text": ["one ", "two ", "three ", "four ", "five ", "six "], "delay_ms": 200}]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello\n"})
	out := runNodeClient(t, dir, "client.mjs", ws, "BRIDLE_DB="+filepath.Join(t.TempDir(), "b.db"), "BRIDLE_MODEL="+acptest.Scenario(t, scenario))
	var r struct {
		ProtocolVersion int            `json:"protocolVersion"`
		Agent           string         `json:"agent"`
		FirstStop       string         `json:"firstStop"`
		CancelStop      string         `json:"cancelStop"`
		Replayed        int            `json:"replayed"`
		Updates         map[string]int `json:"updates"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("node client printed %q: %v", out, err)
	}
	if r.ProtocolVersion != 1 || r.Agent != "bridle" || r.FirstStop != "end_turn" || r.CancelStop != "cancelled" {
		t.Fatalf("report = %+v", r)
	}
	if r.Replayed < 6 || r.Updates["tool_call"] < 2 || r.Updates["user_message_chunk"] < 2 {
		t.Fatalf("load replayed %d updates (%v); want the prompts, answers and the tool call again", r.Replayed, r.Updates)
	}
}

// A client written with the official ACP TypeScript SDK forks a session
// with ACP's session/fork, prompts in the fork, and a second process
// loads both: the fork holds the parent's conversation and its own, the
// parent only its own.
func TestTypeScriptSDKForks(t *testing.T) {
	dir := nodeSDK(t)
	const scenario = `{"turns": [
		{"match": "PROMPT-ONE", "calls": [{"text": "one done"}]},
		{"match": "PROMPT-TWO", "calls": [{"text": "two done"}]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello\n"})
	out := runNodeClient(t, dir, "fork.mjs", ws, "BRIDLE_DB="+filepath.Join(t.TempDir(), "b.db"), "BRIDLE_MODEL="+acptest.Scenario(t, scenario))
	var r struct {
		OffersFork    bool     `json:"offersFork"`
		Parent        string   `json:"parent"`
		ForkID        string   `json:"fork"`
		ForkModes     int      `json:"forkModes"`
		ParentStop    string   `json:"parentStop"`
		ForkStop      string   `json:"forkStop"`
		ForkPrompts   []string `json:"forkPrompts"`
		ForkAnswers   string   `json:"forkAnswers"`
		ParentPrompts []string `json:"parentPrompts"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("node client printed %q: %v", out, err)
	}
	if !r.OffersFork || r.ForkID == "" || r.ForkID == r.Parent || r.ForkModes == 0 || r.ParentStop != "end_turn" || r.ForkStop != "end_turn" {
		t.Fatalf("report = %s", out)
	}
	if want := []string{"PROMPT-ONE", "PROMPT-TWO"}; !slices.Equal(r.ForkPrompts, want) || !strings.Contains(r.ForkAnswers, "one done") || !strings.Contains(r.ForkAnswers, "two done") {
		t.Errorf("the fork's load replayed prompts %q and answers %q; want %q and both answers", r.ForkPrompts, r.ForkAnswers, want)
	}
	if want := []string{"PROMPT-ONE"}; !slices.Equal(r.ParentPrompts, want) {
		t.Errorf("the parent's load replayed prompts %q; want %q (the fork's prompt stays in the fork)", r.ParentPrompts, want)
	}
}

// A client written with the official ACP TypeScript SDK sees a language
// server's diagnostics in tool results: an edit that breaks a Go file
// (gopls, pinned) reports the type error in the tool call's content the
// client receives, and so does the diagnostics tool of another file.
func TestTypeScriptSDKClientSeesDiagnostics(t *testing.T) {
	dir := nodeSDK(t)
	gopls := lsptest.Gopls(t)
	ws := goWorkspace(t)
	scenario := `{"turns": [{"calls": [` + editCall("main.go", "add(1, 2)", `add(1, "two")`) + `,
		` + toolCall("diagnostics", map[string]any{"path": "other.go"}) + `, {"text": "Broken."}]}]}`
	cfg, _ := userSettings(t, `{"lsp": {"wait_seconds": 120}}`)
	node, _ := exec.LookPath("node")
	out := runNodeClient(t, dir, "diagnostics.mjs", ws, "BRIDLE_DB="+filepath.Join(t.TempDir(), "b.db"), "BRIDLE_MODEL="+acptest.Scenario(t, scenario),
		cfg, "XDG_CACHE_HOME="+t.TempDir(), "PATH="+gopls+":"+goDir(t)+":"+filepath.Dir(node)+":/usr/bin:/bin")
	var r struct {
		Stop  string   `json:"stop"`
		Texts []string `json:"texts"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("node client printed %q: %v", out, err)
	}
	all := strings.Join(r.Texts, "\n")
	if r.Stop != "end_turn" || !strings.Contains(all, `main.go:6:21 error cannot use "two" (untyped string constant) as int value in argument to add`) ||
		!strings.Contains(all, `other.go:3:25 error cannot use "not a number" (untyped string constant) as int value in variable declaration`) {
		t.Errorf("the client saw stop %q and tool results:\n%s", r.Stop, all)
	}
}
