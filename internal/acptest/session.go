package acptest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Initialize performs the ACP handshake as a client that offers no
// capabilities.
func (a *Agent) Initialize() json.RawMessage {
	a.t.Helper()
	return a.InitializeWith(false, false)
}

// InitializeWith performs the ACP handshake as a client that offers (or
// not) to read and write files through its buffers (clientCapabilities.fs).
func (a *Agent) InitializeWith(readTextFile, writeTextFile bool) json.RawMessage {
	a.t.Helper()
	res, err := a.Call("initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": readTextFile, "writeTextFile": writeTextFile}},
		"clientInfo":         map[string]string{"name": "acptest", "version": "1"},
	})
	if err != nil {
		a.t.Fatalf("initialize: %v", err)
	}
	return res
}

// NewSession creates a session in cwd and returns its id.
func (a *Agent) NewSession(cwd string) string {
	a.t.Helper()
	var resp struct {
		SessionID string `json:"sessionId"`
	}
	a.MustCall("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &resp)
	return resp.SessionID
}

// Prompt sends a text prompt and returns the stop reason.
func (a *Agent) Prompt(sessionID, text string) string {
	a.t.Helper()
	var resp struct {
		StopReason string `json:"stopReason"`
	}
	a.MustCall("session/prompt", PromptParams(sessionID, text), &resp)
	return resp.StopReason
}

// PromptParams are session/prompt params with one text block.
func PromptParams(sessionID, text string) map[string]any {
	return map[string]any{"sessionId": sessionID, "prompt": []any{map[string]string{"type": "text", "text": text}}}
}

// Update is one session/update, decoded loosely.
type Update struct {
	Kind   string         // sessionUpdate
	Text   string         // content text of a chunk
	Fields map[string]any // the whole update
}

// Updates returns the session/update notifications received for a session.
func (a *Agent) Updates(sessionID string) []Update {
	var out []Update
	for _, m := range a.Notes() {
		if m.Method != "session/update" {
			continue
		}
		var p struct {
			SessionID string         `json:"sessionId"`
			Update    map[string]any `json:"update"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.SessionID != sessionID {
			continue
		}
		u := Update{Fields: p.Update}
		u.Kind, _ = p.Update["sessionUpdate"].(string)
		if c, ok := p.Update["content"].(map[string]any); ok {
			u.Text, _ = c["text"].(string)
		}
		out = append(out, u)
	}
	return out
}

// Transcript renders updates as comparable lines: consecutive chunks of
// one kind are merged (streaming splits text arbitrarily), and kinds in
// skip are left out.
func Transcript(updates []Update, skip ...string) []string {
	var out []string
	lastKind := ""
	for _, u := range updates {
		if contains(skip, u.Kind) {
			continue
		}
		switch u.Kind {
		case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
			if lastKind == u.Kind {
				out[len(out)-1] += u.Text
			} else {
				out = append(out, u.Kind+": "+u.Text)
			}
		default:
			b, _ := json.Marshal(u.Fields)
			out = append(out, string(b))
		}
		lastKind = u.Kind
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Scenario writes a scripted-model scenario to a temp file and returns the
// BRIDLE_MODEL value that plays it.
func Scenario(t testing.TB, jsonText string) string {
	t.Helper()
	if !json.Valid([]byte(jsonText)) {
		t.Fatalf("scenario is not valid JSON: %s", jsonText)
	}
	p := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(p, []byte(jsonText), 0o644); err != nil {
		t.Fatal(err)
	}
	return "scripted/" + p
}

// Workspace creates a temp directory with the given files.
func Workspace(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Log returns `bridle log --json SESSION` for the agent's database, one
// decoded event per entry.
func Log(t testing.TB, db, sessionID string) []map[string]any {
	t.Helper()
	out, err := Run(t, "log", "--db", db, "--json", sessionID)
	if err != nil {
		t.Fatalf("bridle log: %v\n%s", err, out)
	}
	var events []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("bridle log --json printed %q: %v", line, err)
		}
		events = append(events, e)
	}
	return events
}

// Kinds lists the kinds of logged events.
func Kinds(events []map[string]any) string {
	var k []string
	for _, e := range events {
		k = append(k, fmt.Sprint(e["kind"]))
	}
	return strings.Join(k, " ")
}
