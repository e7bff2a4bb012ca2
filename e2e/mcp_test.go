package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/mcptest"
)

// stdioServer is an ACP mcpServers entry for the test server; tag marks
// its command line so a test can find the process.
func stdioServer(t *testing.T, name, tag, metaLog string, extra ...string) map[string]any {
	args := []string{"-tag", tag}
	if metaLog != "" {
		args = append(args, "-meta", metaLog)
	}
	return map[string]any{"name": name, "command": mcptest.Binary(t), "args": append(args, extra...),
		"env": []map[string]string{{"name": "MCP_TEST_TOKEN", "value": "tok-from-the-editor-42"}}}
}

func newSessionWith(t *testing.T, a *acptest.Agent, cwd string, servers ...map[string]any) string {
	t.Helper()
	if servers == nil {
		servers = []map[string]any{}
	}
	var resp struct{ SessionID string }
	a.MustCall("session/new", map[string]any{"cwd": cwd, "mcpServers": servers}, &resp)
	return resp.SessionID
}

func call(name, input string) string {
	return fmt.Sprintf(`{"name": %q, "input": %s}`, name, input)
}

// tag is unique to a test, for finding its server processes.
func tag(t *testing.T) string {
	return fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), time.Now().UnixNano())
}

// serverLog reads the test server's record of the calls it got.
func serverLog(t *testing.T, path string) []map[string]any {
	b, _ := os.ReadFile(path)
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("server log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func keyOf(m map[string]any) string {
	meta, _ := m["meta"].(map[string]any)
	k, _ := meta["dev.bridle/idempotencyKey"].(string)
	return k
}

func TestMCPToolsCallsAndApprovals(t *testing.T) {
	metaLog := filepath.Join(t.TempDir(), "meta.jsonl")
	scenario := `{"turns": [{"match": "use mcp", "calls": [
		{"tool_calls": [` + call("show_me_the_tools", `{}`) + `]},
		{"tool_calls": [` + call("mcp__files__echo", `{"text": "hi"}`) + `, ` + call("mcp__files__write_note", `{"name": "n.txt", "text": "noted"}`) + `]},
		{"tool_calls": [` + call("mcp__files__secret", `{}`) + `, ` + call("mcp__files__big", `{"lines": 3000}`) + `]},
		{"text": "done"}
	]}]}`
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	an := &answerer{answers: []string{"allow_once"}}
	a.OnRequest = an.handle
	init := a.Initialize()
	var caps struct {
		AgentCapabilities struct {
			MCPCapabilities map[string]any `json:"mcpCapabilities"`
		} `json:"agentCapabilities"`
	}
	if err := json.Unmarshal(init, &caps); err != nil || caps.AgentCapabilities.MCPCapabilities["http"] != true {
		t.Errorf("initialize does not advertise http MCP servers (%v): %s", err, init)
	}
	sid := newSessionWith(t, a, ws, stdioServer(t, "files", tag(t), metaLog))
	if stop := a.Prompt(sid, "use mcp"); stop != "end_turn" {
		t.Fatalf("stop = %s", stop)
	}
	res := toolResults(t, a.DB, sid)
	if len(res) != 5 {
		t.Fatalf("%d results: %v", len(res), res)
	}
	// The catalogue, as the mode's error lists it: the server's tools under
	// mcp__server__tool names, beside the built-ins.
	for _, name := range []string{"mcp__files__echo", "mcp__files__write_note", "mcp__files__crash", "read_file", "task"} {
		if !strings.Contains(res[0]["output"].(string), name) {
			t.Errorf("the catalogue lacks %s: %s", name, res[0]["output"])
		}
	}
	// echo is read-only: it ran unasked; write_note was asked for.
	if res[1]["output"] != "echo: hi" || res[2]["output"] != "wrote n.txt" {
		t.Errorf("results = %v / %v", res[1], res[2])
	}
	if an.count() != 1 {
		t.Fatalf("asked %d times, want 1 (write_note only)", an.count())
	}
	tc := an.asked[0]["toolCall"].(map[string]any)
	if !strings.Contains(tc["title"].(string), "write_note (MCP files)") {
		t.Errorf("question = %v", tc)
	}
	if readFile(t, ws, "n.txt") != "noted" {
		t.Errorf("the server did not run in the session's directory")
	}
	// The server saw each call's idempotency key in _meta.
	keys := map[string]string{}
	for _, e := range acptest.Log(t, a.DB, sid) {
		if e["kind"] == "tool_started" {
			p := e["payload"].(map[string]any)
			keys[p["name"].(string)] = p["key"].(string)
		}
	}
	seen := map[string]string{}
	for _, m := range serverLog(t, metaLog) {
		seen[m["tool"].(string)] = keyOf(m)
	}
	for _, tool := range []string{"echo", "write_note", "secret", "big"} {
		if k := keys["mcp__files__"+tool]; k == "" || seen[tool] != k {
			t.Errorf("%s: key %q in the log, %q seen by the server", tool, k, seen[tool])
		}
	}
	// The same redaction and caps as built-in tools.
	if out := res[3]["output"].(string); strings.Contains(out, "tok-from-the-editor-42") || !strings.Contains(out, "[REDACTED") {
		t.Errorf("secret not redacted: %q", out)
	}
	if res[4]["artifact"] == nil || !strings.Contains(res[4]["output"].(string), "read_artifact") {
		t.Errorf("a big output was not capped: %d bytes, artifact %v", len(res[4]["output"].(string)), res[4]["artifact"])
	}
	a.AssertValid(t)
}

func TestMCPToolsFollowTheMode(t *testing.T) {
	metaLog := filepath.Join(t.TempDir(), "meta.jsonl")
	scenario := `{"turns": [
		{"match": "read only", "calls": [
			{"tool_calls": [` + call("show_me_the_tools", `{}`) + `, ` + call("mcp__files__write_note", `{"name": "a.txt", "text": "a"}`) + `, ` + call("mcp__files__echo", `{"text": "ro"}`) + `]},
			{"text": "ok"}]},
		{"match": "full auto", "calls": [
			{"tool_calls": [` + call("mcp__files__write_note", `{"name": "b.txt", "text": "b"}`) + `]},
			{"text": "ok"}]}
	]}`
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	an := &answerer{}
	a.OnRequest = an.handle
	a.Initialize()
	sid := newSessionWith(t, a, ws, stdioServer(t, "files", tag(t), metaLog))
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "read-only"}, nil)
	a.Prompt(sid, "read only")
	res := toolResults(t, a.DB, sid)
	if list := res[0]["output"].(string); !strings.Contains(list, "mcp__files__echo") || strings.Contains(list, "write_note") || strings.Contains(list, "crash") {
		t.Errorf("read-only catalogue: %s", list)
	}
	if res[1]["status"] != "unavailable" || !strings.Contains(res[1]["output"].(string), "not available in read-only mode") {
		t.Errorf("write_note in read-only mode = %v", res[1])
	}
	if res[2]["output"] != "echo: ro" {
		t.Errorf("echo in read-only mode = %v", res[2])
	}
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	a.Prompt(sid, "full auto")
	if an.count() != 0 || readFile(t, ws, "b.txt") != "b" || readFile(t, ws, "a.txt") != "" {
		t.Errorf("asked %d times; b.txt %q, a.txt %q", an.count(), readFile(t, ws, "b.txt"), readFile(t, ws, "a.txt"))
	}
}

// agentText joins the agent message chunks sent for a session.
func agentText(a *acptest.Agent, sid string) string {
	var b strings.Builder
	for _, u := range a.Updates(sid) {
		if u.Kind == "agent_message_chunk" {
			b.WriteString(u.Text)
		}
	}
	return b.String()
}

func TestMCPServerFailuresAreReported(t *testing.T) {
	scenario := `{"turns": [{"match": "crash", "calls": [
		{"tool_calls": [` + call("mcp__files__crash", `{}`) + `]},
		{"tool_calls": [` + call("mcp__files__echo", `{"text": "x"}`) + `]},
		{"text": "I carry on without it."}
	]}]}`
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), Env: []string{"BRIDLE_LOG=warn"}})
	a.OnRequest = (&answerer{answers: []string{"allow_once"}}).handle
	a.Initialize()
	id := tag(t)
	sid := newSessionWith(t, a, ws,
		map[string]any{"name": "ghost", "command": "/nonexistent/mcp-server", "args": []string{}, "env": []any{}},
		stdioServer(t, "broken", id, "", "-fail", "no config file found"),
		stdioServer(t, "files", id, ""),
	)
	// Both failures reach the editor, after the answer that names the session.
	a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), `MCP server \"broken\"`) })
	a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), `MCP server \"ghost\"`) })
	text := agentText(a, sid)
	if !strings.Contains(text, "no config file found") || !strings.Contains(text, "goes on without its tools") {
		t.Errorf("failure notices: %q", text)
	}
	// A server that dies mid-session is reported; the session goes on.
	if stop := a.Prompt(sid, "crash it"); stop != "end_turn" {
		t.Fatalf("stop = %s", stop)
	}
	res := toolResults(t, a.DB, sid)
	if res[0]["status"] != "failed" || !strings.Contains(res[0]["output"].(string), "the call was cut short") {
		t.Errorf("the crashing call = %v", res[0])
	}
	// Usually the tool is gone from the catalogue by then; if the model's
	// request raced the server's death, the call itself says why.
	if st := res[1]["status"]; (st != "unavailable" && st != "failed") || !strings.Contains(res[1]["output"].(string), `MCP server "files" stopped (exit status 3)`) {
		t.Errorf("a call after the crash = %v", res[1])
	}
	a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), `MCP server \"files\" stopped`) })
	if !strings.Contains(agentText(a, sid), "crashing on purpose") {
		t.Errorf("the notice does not quote the server's stderr: %q", agentText(a, sid))
	}
	a.AssertValid(t)
}

func TestMCPServersStopWithTheSession(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	scenario := `{"turns": [{"match": "spawn", "calls": [{"tool_calls": [` + call("mcp__files__spawn", `{}`) + `]}, {"text": "ok"}]}]}`
	model := acptest.Scenario(t, scenario)
	start := func() *acptest.Agent {
		a := acptest.Start(t, acptest.Options{Model: model})
		a.OnRequest = (&answerer{answers: []string{"allow_once", "allow_once"}}).handle
		a.Initialize()
		return a
	}
	up := func(id string) { waitFor(t, func() bool { return processesWith(id) == 1 }) }
	gone := func(id, when string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); processesWith(id) > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("MCP server still running after %s", when)
			}
		}
	}

	a := start()
	// session/close, with a process the server started: its group goes too.
	id := tag(t)
	sid := newSessionWith(t, a, ws, stdioServer(t, "files", id, ""))
	a.Prompt(sid, "spawn")
	var pid int
	fmt.Sscanf(toolResults(t, a.DB, sid)[0]["output"].(string), "started %d", &pid)
	up(id)
	a.MustCall("session/close", map[string]any{"sessionId": sid}, nil)
	gone(id, "session/close")
	waitFor(t, func() bool { return pidGone(pid) || zombie(pid) })

	// session/load with the servers starts them again; session/delete stops them.
	a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{stdioServer(t, "files", id, "")}}, nil)
	up(id)
	a.MustCall("session/delete", map[string]any{"sessionId": sid}, nil)
	gone(id, "session/delete")

	// Loading a live session with other servers replaces them.
	id2, id3 := tag(t), tag(t)
	sid = newSessionWith(t, a, ws, stdioServer(t, "files", id2, ""))
	up(id2)
	a.MustCall("session/resume", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{stdioServer(t, "files", id3, "")}}, nil)
	up(id3)
	gone(id2, "a resume with other servers")

	// The editor closing bridle's stdin (it exits).
	if code := a.CloseStdin(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	gone(id3, "bridle exited")

	// bridle killed outright: the server sees its stdin close, or gets
	// SIGKILL with its parent.
	b := start()
	id4 := tag(t)
	newSessionWith(t, b, ws, stdioServer(t, "files", id4, ""))
	up(id4)
	b.Kill()
	gone(id4, "bridle was killed")
}

func zombie(pid int) bool {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(s))
	return len(f) > 2 && f[2] == "Z"
}

// After a crash inside an MCP call, the call is decided like a built-in
// one: a read-only tool runs again (with the same key, so the server can
// tell), any other is "outcome unknown".
func TestMCPCallsAfterACrash(t *testing.T) {
	for _, tt := range []struct {
		tool, input, status, output string
		calls                       int
	}{
		{"echo", `{"text": "again"}`, "completed", "(run again after a restart)\necho: again", 2},
		{"write_note", `{"name": "n.txt", "text": "once"}`, "unknown", "outcome unknown", 1},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			metaLog := filepath.Join(t.TempDir(), "meta.jsonl")
			scenario := `{"turns": [{"match": "go", "calls": [{"tool_calls": [` + call("mcp__files__"+tt.tool, tt.input) + `]}, {"text": "ok"}]}]}`
			model := acptest.Scenario(t, scenario)
			ws := acptest.Workspace(t, nil)
			id := tag(t)
			a := acptest.Start(t, acptest.Options{Model: model, Env: []string{"BRIDLE_FAULT=tool:1"}})
			a.OnRequest = (&answerer{answers: []string{"allow_once"}}).handle
			a.Initialize()
			sid := newSessionWith(t, a, ws, stdioServer(t, "files", id, metaLog))
			a.Request("session/prompt", acptest.PromptParams(sid, "go"))
			a.WaitExit()

			b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
			b.Initialize()
			b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{stdioServer(t, "files", id, metaLog)}}, nil)
			recovered(t, b, sid)
			res := toolResults(t, b.DB, sid)
			if len(res) != 1 || res[0]["status"] != tt.status || !strings.Contains(res[0]["output"].(string), tt.output) {
				t.Fatalf("after the restart: %v", res)
			}
			calls := serverLog(t, metaLog)
			if len(calls) != tt.calls {
				t.Fatalf("the server got %d calls, want %d: %v", len(calls), tt.calls, calls)
			}
			if keyOf(calls[0]) != keyOf(calls[len(calls)-1]) || keyOf(calls[0]) == "" {
				t.Errorf("a re-run carried another key: %v", calls)
			}
		})
	}
}

func TestMCPOverHTTP(t *testing.T) {
	url := mcptest.StartHTTP(t, "let-me-in")
	scenario := `{"turns": [{"match": "go", "calls": [{"tool_calls": [` + call("mcp__web__echo", `{"text": "over http"}`) + `]}, {"text": "ok"}]}]}`
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := newSessionWith(t, a, acptest.Workspace(t, nil), map[string]any{"type": "http", "name": "web", "url": url,
		"headers": []map[string]string{{"name": "X-Test-Auth", "value": "let-me-in"}}})
	a.Prompt(sid, "go")
	if res := toolResults(t, a.DB, sid); len(res) != 1 || res[0]["output"] != "echo: over http" {
		t.Errorf("results = %v", res)
	}
	a.AssertValid(t)
}

func TestMCPBadServerEntries(t *testing.T) {
	a := acptest.Start(t, acptest.Options{})
	a.Initialize()
	ws := acptest.Workspace(t, nil)
	for _, tt := range []struct {
		server map[string]any
		want   string
	}{
		{map[string]any{"name": "", "command": "x", "args": []any{}, "env": []any{}}, "name is empty"},
		{map[string]any{"type": "sse", "name": "s", "url": "http://127.0.0.1:1/sse", "headers": []any{}}, "mcpCapabilities.sse is false"},
		{map[string]any{"type": "http", "name": "h", "url": "not a url", "headers": []any{}}, "not an http(s) URL"},
	} {
		_, rerr := a.Call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{tt.server}})
		if rerr == nil || rerr.Code != -32602 || !strings.Contains(rerr.Message, tt.want) {
			t.Errorf("session/new with %v: %v, want -32602 %q", tt.server, rerr, tt.want)
		}
	}
}
