package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestKeyNamedSecretsInToolInputsThroughTheBinary: a tool call whose
// input holds secrets that only their keys mark ({"env": {"API_KEY": …}},
// "password", an array of "tokens") runs with them — the MCP server gets
// them as the model wrote them — while the log, the live card's rawInput,
// the permission question, the replay of session/load and the requests
// that send the call back to the model hold markers in their place.
func TestKeyNamedSecretsInToolInputsThroughTheBinary(t *testing.T) {
	// Letters and digits, no token format: only the keys say they are
	// secret. Assembled at run time, for secret scanners.
	apiKey, password, token := "k3yV4lue"+"Zq81Lm7Xw2", "hunter2"+"hunter2x9", "t0kenV4l"+"ue9Pq3"
	input, _ := json.Marshal(map[string]any{"command": "./deploy --prod", "env": map[string]string{"API_KEY": apiKey, "REGION": "eu-west-1"},
		"password": password, "tokens": []string{token}})
	scenario := `{"turns": [{"calls": [
		{"tool_calls": [` + call("mcp__ops__deploy", string(input)) + `]},
		{"text": "Deployed."}
	]}]}`
	ws := acptest.Workspace(t, nil)
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	model := acptest.Scenario(t, scenario)
	env := []string{"BRIDLE_RECORD_REQUESTS=" + requests}
	an := &answerer{answers: []string{"allow_once"}}
	a := acptest.Start(t, acptest.Options{Model: model, Env: env})
	a.OnRequest = an.handle
	a.Initialize()
	server := stdioServer(t, "ops", tag(t), "")
	sid := newSessionWith(t, a, ws, server)
	if stop := a.Prompt(sid, "deploy"); stop != "end_turn" {
		t.Fatalf("stopReason = %q; stderr:\n%s", stop, a.Stderr())
	}
	events, rerr := a.Call("_bridle/events", map[string]any{"sessionId": sid})
	if rerr != nil {
		t.Fatal(rerr)
	}
	a.CloseStdin()

	// The server got the values the model wrote.
	res := toolResults(t, a.DB, sid)
	want := fmt.Sprintf("deployed with ./deploy --prod: API_KEY has %d characters; REGION has 9 characters; the password has %d; token 0 has %d;",
		len(apiKey), len(password), len(token))
	if len(res) != 1 || res[0]["output"] != want {
		t.Fatalf("results %v, want one saying %q", res, want)
	}
	if an.count() != 1 {
		t.Fatalf("asked %d times, want 1", an.count())
	}
	question, _ := json.Marshal(an.asked[0])
	var live []string
	for _, u := range a.Updates(sid) {
		if u.Kind == "tool_call" {
			b, _ := json.Marshal(u.Fields)
			live = append(live, string(b))
		}
	}

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model, Env: env})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{server}}, nil)
	replay := strings.Join(acptest.Transcript(b.Updates(sid)), "\n")
	b.CloseStdin()

	// Each place shows the call, its secrets replaced.
	marked := `"env":{"API_KEY":"[REDACTED:assignment]","REGION":"eu-west-1"}`
	for name, data := range map[string]string{"the log": string(events), "the live card": strings.Join(live, "\n"),
		"the permission question": string(question), "the replay": replay} {
		if !strings.Contains(data, marked) {
			t.Errorf("%s does not show the call's input with its key's value redacted (%s):\n%s", name, marked, data)
		}
	}
	where := everywhere(events, requests, a, b)
	where["the permission question"] = question
	secrets := map[string]string{"env.API_KEY": apiKey, "password": password, "tokens[0]": token}
	for name, data := range where {
		for what, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds %s (%q)", name, what, s)
			}
		}
	}
}
