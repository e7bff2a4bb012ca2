package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestSessionForkThroughTheBinary: ACP's session/fork, which clients such
// as acp.el call, forks a session of two prompts at its end. initialize
// says bridle forks; the fork is open at once, as session/new's is: a
// prompt in it reaches the model with the parent's whole conversation,
// and session/load of it replays that. The parent's log is unchanged.
func TestSessionForkThroughTheBinary(t *testing.T) {
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a, sid, ws := rewindSession(t, acptest.Options{Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}}, nil)
	for _, s := range a.Sent() {
		if s.Method != "initialize" {
			continue
		}
		var init struct {
			Result struct {
				AgentCapabilities struct {
					SessionCapabilities map[string]json.RawMessage `json:"sessionCapabilities"`
				} `json:"agentCapabilities"`
			} `json:"result"`
		}
		json.Unmarshal(s.Raw, &init)
		if _, ok := init.Result.AgentCapabilities.SessionCapabilities["fork"]; !ok {
			t.Errorf("initialize does not offer sessionCapabilities.fork:\n%s", s.Raw)
		}
	}
	parentLog := acptest.Kinds(acptest.Log(t, a.DB, sid))

	var fork struct {
		SessionID     string          `json:"sessionId"`
		Modes         json.RawMessage `json:"modes"`
		ConfigOptions json.RawMessage `json:"configOptions"`
	}
	raw, rerr := a.Call("session/fork", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}})
	if rerr != nil {
		t.Fatalf("session/fork: %d %s", rerr.Code, rerr.Message)
	}
	if err := json.Unmarshal(raw, &fork); err != nil || fork.SessionID == "" || fork.SessionID == sid || len(fork.Modes) == 0 || len(fork.ConfigOptions) == 0 {
		t.Fatalf("session/fork answered %s (%v): want a new session id with its modes and config options", raw, err)
	}
	// Open already: prompted without session/load, the fork's model
	// request carries both of the parent's prompts and its own.
	if stop := a.Prompt(fork.SessionID, "PROMPT-THREE"); stop != "end_turn" {
		t.Fatalf("a prompt in the fork: %s", stop)
	}
	reqs := modelRequests(t, requests)
	var forkReq strings.Builder
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, p := range m.Parts {
			forkReq.WriteString(p.Text + "\n")
		}
	}
	for _, want := range []string{"PROMPT-ONE", "one done", "PROMPT-TWO", "two done", "PROMPT-THREE"} {
		if !strings.Contains(forkReq.String(), want) {
			t.Errorf("the fork's model request lacks %q:\n%s", want, forkReq.String())
		}
	}
	if got := acptest.Kinds(acptest.Log(t, a.DB, sid)); got != parentLog {
		t.Errorf("the parent's log changed with the fork:\nbefore %s\nafter  %s", parentLog, got)
	}

	// A second process loads the fork: the replay is the parent's history
	// and then the fork's own prompt.
	a.CloseStdin()
	a.AssertValid(t)
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: acptest.Scenario(t, rewindScenario)})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": fork.SessionID, "cwd": ws, "mcpServers": []any{}}, nil)
	var replayed []string
	for _, u := range b.Updates(fork.SessionID) {
		if u.Text != "" {
			replayed = append(replayed, u.Text)
		}
	}
	at := 0
	for _, want := range []string{"PROMPT-ONE", "one done", "PROMPT-TWO", "two done", "PROMPT-THREE", "three done"} {
		for at < len(replayed) && !strings.Contains(replayed[at], want) {
			at++
		}
		if at == len(replayed) {
			t.Fatalf("the fork's load does not replay %q in order; it replays:\n%s", want, strings.Join(replayed, "\n"))
		}
	}
	if got := acptest.Kinds(acptest.Log(t, b.DB, sid)); got != parentLog {
		t.Errorf("the parent's log changed with the fork's prompt:\nbefore %s\nafter  %s", parentLog, got)
	}

	// Bad input is refused, saying what was wrong, and leaves no trace:
	// no fork stored, the parent not opened (nor its lease taken).
	sessions := func() int {
		var list struct {
			Sessions []struct{ SessionID string } `json:"sessions"`
		}
		b.MustCall("session/list", map[string]any{}, &list)
		return len(list.Sessions)
	}
	listed := sessions()
	for _, c := range []struct {
		name   string
		params map[string]any
		code   int
		says   string
	}{
		{"no cwd", map[string]any{"sessionId": sid, "mcpServers": []any{}}, -32602, `"cwd" is required`},
		{"another directory", map[string]any{"sessionId": sid, "cwd": t.TempDir(), "mcpServers": []any{}}, -32602, "fork it from that directory"},
		{"no such session", map[string]any{"sessionId": "nope", "cwd": ws, "mcpServers": []any{}}, -32002, "no session"},
		// The unstable schema's MCP servers served over ACP itself, which
		// initialize's mcpCapabilities.acp (false) says bridle does not take.
		{"an acp MCP server", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{map[string]any{"type": "acp", "name": "x", "serverId": "s1"}}}, -32602, `"mcpServers[0]" is of type "acp"`},
		{"an MCP server with no command", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{map[string]any{"name": "x", "command": "", "args": []any{}, "env": []any{}}}}, -32602, "command is empty"},
	} {
		if _, err := b.Call("session/fork", c.params); err == nil || err.Code != c.code || !strings.Contains(err.Message, c.says) {
			t.Errorf("session/fork with %s: %v, want %d saying %q", c.name, err, c.code, c.says)
		}
	}
	if n := sessions(); n != listed {
		t.Errorf("refused forks left %d sessions behind", n-listed)
	}
	other := acptest.Start(t, acptest.Options{DB: a.DB, Model: acptest.Scenario(t, rewindScenario)})
	other.Initialize()
	if _, err := other.Call("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}); err != nil {
		t.Errorf("another process cannot load the parent after refused forks (one took it?): %v", err)
	}
	other.CloseStdin()
	other.AssertValid(t)
	b.CloseStdin()
	b.AssertValid(t)
}
