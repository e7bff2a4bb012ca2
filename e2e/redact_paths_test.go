package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// Fake secrets, assembled at run time so that secret scanners do not flag
// this file.
var (
	// pathsValue is a .env value of the workspace; the model prints it in
	// halves and percent-encoded.
	pathsValue = "dotenvpath-" + "Qm4Xr8Tz2Lp6Wk"
	// pathsToken is a token the model writes: in its answer (split
	// across stream chunks), its thinking, its tool calls, its plan and
	// its pins.
	pathsToken = "ghp_" + "Zy7Lq2Wx9Kd4Mv8Tr3Bn6Pf1Hs5Jc0Ga4Ue"
	// editorToken is in the error the editor answers fs/read_text_file
	// with.
	editorToken = "ghp_" + "Ed1tRr0rXq9Wm3Kz7Lp2Nv6Bt4Hy8Jc5Fs0"
)

func percentEncoded(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// jsonEscaped writes s with every character as a \u escape, inside a JSON
// string.
func jsonEscaped(s string) string {
	var b strings.Builder
	for _, c := range s {
		fmt.Fprintf(&b, `\u%04x`, c)
	}
	return b.String()
}

// pathsScenario has the model write the secrets everywhere it writes:
// thinking, a streamed answer (the token cut across chunks, the .env
// value in halves on two lines and percent-encoded), a read the editor
// fails with a token in its error, a command carrying the token (run
// with it: it prints its length), a plan step and a pin (the pin's text
// JSON-escaped).
func pathsScenario() string {
	v, tk := pathsValue, pathsToken
	text, _ := json.Marshal([]string{"Here is the key: ", tk[:10], tk[10:25], tk[25:], " and the value in halves:\n",
		v[:len(v)/2], "\n", v[len(v)/2:], "\nencoded: ", percentEncoded(v), " and ", "q=ghp%5F" + tk[4:], " then ", "a tool."})
	return `{"turns": [{"calls": [
		{"thinking": "I must not print ` + tk + `", "text": ` + string(text) + `,
		 "tool_calls": [
			{"name": "read_file", "input": {"path": "notes.txt"}},
			{"name": "run_command", "input": {"command": "printf %s '` + tk + `' | wc -c"}},
			{"name": "plan", "input": {"entries": [{"content": "rotate ` + tk + `", "status": "pending"}]}},
			{"name": "remember", "input": {"kind": "constraint", "text": "never log ` + jsonEscaped(tk) + `"}}
		]},
		{"text": "Done."}
	]}]}`
}

// failingEditor offers fs, answers every read with an error that carries
// a token, and allows every question once; it keeps the questions.
type failingEditor struct {
	mu        sync.Mutex
	questions []json.RawMessage
}

func (e *failingEditor) handle(m acptest.Msg) (any, *acptest.RPCError) {
	switch m.Method {
	case "fs/read_text_file":
		return nil, &acptest.RPCError{Code: -32603, Message: "the buffer is locked by a sync agent using " + editorToken}
	case "session/request_permission":
		e.mu.Lock()
		e.questions = append(e.questions, m.Params)
		e.mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}, nil
	}
	return nil, &acptest.RPCError{Code: -32601, Message: "not expected: " + m.Method}
}

// TestModelAndEditorSecretsThroughTheBinary: what the model writes (its
// answer streamed in chunks, its thinking, its tool calls' inputs and
// titles, its plan, its pins) and what the editor answers (an error's
// text) are redacted before they are stored, shown live, replayed by
// session/load or sent back to the model — while the command runs with
// the input the model wrote.
func TestModelAndEditorSecretsThroughTheBinary(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{".env": "SERVICE_KEY=" + pathsValue + "\n", "notes.txt": "notes\n"})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	model := acptest.Scenario(t, pathsScenario())
	env := []string{"BRIDLE_RECORD_REQUESTS=" + requests}
	ed := &failingEditor{}
	a := acptest.Start(t, acptest.Options{Model: model, Env: env})
	a.OnRequest = ed.handle
	a.InitializeWith(true, true)
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "rotate the keys"); stop != "end_turn" {
		t.Fatalf("stopReason = %q; stderr:\n%s", stop, a.Stderr())
	}
	events, rerr := a.Call("_bridle/events", map[string]any{"sessionId": sid})
	if rerr != nil {
		t.Fatal(rerr)
	}
	a.CloseStdin()

	// The command ran with the token the model wrote, not with the
	// marker its record holds.
	var results []string
	for _, e := range acptest.Log(t, a.DB, sid) {
		if e["kind"] == "tool_result" {
			out, _ := e["payload"].(map[string]any)["output"].(string)
			results = append(results, out)
		}
	}
	if len(results) != 4 {
		t.Fatalf("%d tool results, want 4: %q", len(results), results)
	}
	if !strings.Contains(results[0], "the editor could not give notes.txt") || !strings.Contains(results[0], "[REDACTED:github-token]") {
		t.Errorf("the read's result does not say, redacted, why the editor failed: %q", results[0])
	}
	if want := fmt.Sprint(len(pathsToken)); !strings.HasPrefix(results[1], want+"\n") {
		t.Errorf("the command printed %q, want %s: it did not run with the input the model wrote", results[1], want)
	}

	live := a.Updates(sid)
	var answer, thought strings.Builder
	var cards []string
	for _, u := range live {
		switch u.Kind {
		case "agent_message_chunk":
			answer.WriteString(u.Text)
		case "agent_thought_chunk":
			thought.WriteString(u.Text)
		case "tool_call", "tool_call_update", "plan":
			b, _ := json.Marshal(u.Fields)
			cards = append(cards, string(b))
		}
	}
	wantAnswer := "Here is the key: [REDACTED:github-token] and the value in halves:\n[REDACTED:.env:SERVICE_KEY]\n[REDACTED:.env:SERVICE_KEY]\n" +
		"encoded: [REDACTED:.env:SERVICE_KEY] and q=[REDACTED:github-token] then a tool."
	if !strings.HasPrefix(answer.String(), wantAnswer) {
		t.Errorf("the streamed answer is\n%q\nwant it to start with\n%q", answer.String(), wantAnswer)
	}
	if want := "I must not print [REDACTED:github-token]"; thought.String() != want {
		t.Errorf("the streamed thinking is %q, want %q", thought.String(), want)
	}
	allCards := strings.Join(cards, "\n")
	for _, want := range []string{`"rawInput":{"command":"printf %s '[REDACTED:github-token]' | wc -c"}`, `"title":"printf %s '[REDACTED:github-token]' | wc -c"`,
		`"content":"rotate [REDACTED:github-token]"`, `never log [REDACTED:github-token]`} {
		if !strings.Contains(allCards, want) {
			t.Errorf("the tool cards and plan shown live lack %s:\n%s", want, allCards)
		}
	}
	ed.mu.Lock()
	var questions []byte
	for _, q := range ed.questions {
		questions = append(questions, q...)
	}
	ed.mu.Unlock()
	if !bytes.Contains(questions, []byte("[REDACTED:github-token]")) {
		t.Errorf("the permission question shows no marker: %s", questions)
	}
	for _, want := range []string{`"text":"` + strings.ReplaceAll(wantAnswer, "\n", `\n`), `"thinking":"I must not print [REDACTED:github-token]"`,
		`"redacted":true`, `"summary":"printf %s '[REDACTED:github-token]' | wc -c"`} {
		if !strings.Contains(string(events), want) {
			t.Errorf("the log lacks %s:\n%s", want, events)
		}
	}

	// Another process loads the session: the replay shows the same.
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model, Env: env})
	b.OnRequest = ed.handle
	b.InitializeWith(true, true)
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	replay := strings.Join(acptest.Transcript(b.Updates(sid)), "\n")
	for _, want := range []string{"agent_message_chunk: " + wantAnswer, "agent_thought_chunk: I must not print [REDACTED:github-token]",
		`"rawInput":{"command":"printf %s '[REDACTED:github-token]' | wc -c"}`, `"content":"rotate [REDACTED:github-token]"`,
		"[read from disk: the editor could not give notes.txt: error -32603: the buffer is locked by a sync agent using [REDACTED:github-token]]"} {
		if !strings.Contains(replay, want) {
			t.Errorf("the replay lacks %q:\n%s", want, replay)
		}
	}
	b.CloseStdin()

	where := everywhere(events, requests, a, b)
	v, tk := pathsValue, pathsToken
	secrets := map[string]string{"the model's token": tk, "the token's middle": tk[10:25], "the editor's token": editorToken,
		"the .env value": v, "its first half": v[:len(v)/2], "its second half": v[len(v)/2:], "it percent-encoded": percentEncoded(v),
		"the token JSON-escaped": jsonEscaped(tk), "the token percent-escaped": "ghp%5F" + tk[4:]}
	for name, data := range where {
		for what, s := range secrets {
			if bytes.Contains(data, []byte(s)) || bytes.Contains(data, []byte(strings.ReplaceAll(s, `\`, `\\`))) {
				t.Errorf("%s holds %s (%q)", name, what, s)
			}
		}
	}
}

// TestRedactedCallIsNotRunFromTheLog: bridle dies inside a search whose
// pattern holds a token; the log keeps the pattern redacted, so the
// restarted bridle does not search again for the marker (which would
// answer something else than the model asked), and says why.
func TestRedactedCallIsNotRunFromTheLog(t *testing.T) {
	scenario := `{"turns": [{"calls": [
		{"tool_calls": [{"name": "grep", "input": {"pattern": "` + pathsToken + `"}}]},
		{"text": "Done."}
	]}]}`
	ws := acptest.Workspace(t, map[string]string{"config.txt": "token = " + pathsToken + "\n"})
	model := acptest.Scenario(t, scenario)
	a := acptest.Start(t, acptest.Options{Model: model, Env: []string{"BRIDLE_FAULT=tool:1"}})
	a.Initialize()
	sid := a.NewSession(ws)
	a.Request("session/prompt", acptest.PromptParams(sid, "find the token"))
	a.WaitExit()

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	b.CloseStdin()
	var res []string
	for _, e := range acptest.Log(t, b.DB, sid) {
		switch e["kind"] {
		case "tool_result":
			out, _ := e["payload"].(map[string]any)["output"].(string)
			res = append(res, out)
		case "tool_started":
			if in, _ := json.Marshal(e["payload"]); !strings.Contains(string(in), `"pattern":"[REDACTED:github-token]"`) {
				t.Errorf("tool_started keeps the pattern as %s", in)
			}
		}
	}
	if len(res) != 1 || !strings.Contains(res[0], "its input held a secret") || strings.Contains(res[0], "config.txt") {
		t.Fatalf("recovered results %q, want one saying the search was not run again", res)
	}
}

// TestRedactedThinkingIsNotSentBackSigned: Anthropic signs a thinking
// block and checks the signature when the block comes back in a later
// request. A block whose text bridle redacted no longer matches its
// signature; sent back signed, it would fail that request and every one
// after it. It is kept unsigned in the log, and not sent back.
func TestRedactedThinkingIsNotSentBackSigned(t *testing.T) {
	token := "ghp_" + strings.Repeat("Tk7", 12)
	thinking := strings.Replace(recorded(t, "anthropic/thinking.sse"), "The user asks for 27 * 453.", "The key is "+token+".", 1)
	srv := providertest.NewServer(t, providertest.Reply{Body: thinking}, providertest.Reply{Body: recorded(t, "anthropic/text.sse")})
	a := acptest.Start(t, acptest.Options{Model: "anthropic/claude-sonnet-4-5", Env: isolated(t, "ANTHROPIC_API_KEY=sk-ant-e2e", "ANTHROPIC_BASE_URL="+srv.URL)})
	a.Initialize()
	sid := a.NewSession(acptest.Workspace(t, nil))
	for _, p := range []string{"what is 27 * 453?", "thanks"} {
		if stop := a.Prompt(sid, p); stop != "end_turn" {
			t.Fatalf("%q ended %q; stderr:\n%s", p, stop, a.Stderr())
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2", len(reqs))
	}
	second := string(reqs[1].Body)
	if strings.Contains(second, "EqQBCgIYAhIM") || strings.Contains(second, `"type":"thinking"`) {
		t.Errorf("the second request sends the redacted thinking back with its signature:\n%s", second)
	}
	if strings.Contains(second, token) {
		t.Errorf("the second request carries the token")
	}
	for _, m := range eventsOf(acptest.Log(t, a.DB, sid), "assistant_message") {
		if strings.Contains(fmt.Sprint(m["thinking"]), "[REDACTED:github-token]") && m["signature"] != nil && m["signature"] != "" {
			t.Errorf("the log keeps the redacted thinking signed: %v", m)
		}
	}
}
