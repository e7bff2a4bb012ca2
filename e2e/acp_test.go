package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

func TestSessionLifecycleSpeaksValidACP(t *testing.T) {
	for _, f := range []struct {
		name string
		f    acptest.Framing
	}{{"ndjson", acptest.NDJSON}, {"content-length", acptest.ContentLength}} {
		t.Run(f.name, func(t *testing.T) {
			ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello from the workspace\n"})
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, toolTurn), Framing: f.f})
			init := a.Initialize()
			var caps struct {
				ProtocolVersion   int `json:"protocolVersion"`
				AgentCapabilities struct {
					LoadSession bool `json:"loadSession"`
				} `json:"agentCapabilities"`
			}
			json.Unmarshal(init, &caps)
			if caps.ProtocolVersion != 1 || !caps.AgentCapabilities.LoadSession {
				t.Fatalf("initialize = %s", init)
			}
			sid := a.NewSession(ws)
			if stop := a.Prompt(sid, "what do the notes say?"); stop != "end_turn" {
				t.Fatalf("stopReason = %q", stop)
			}
			title := "what do the notes say?"
			if infos := titleUpdates(a.Updates(sid)); !slices.Equal(infos, []string{title}) {
				t.Fatalf("session_info_update titles after the first prompt: %q, want [%q]", infos, title)
			}
			got := acptest.Transcript(a.Updates(sid), "available_commands_update", "usage_update", "session_info_update")
			want := []string{
				"agent_thought_chunk: Look first.",
				"agent_message_chunk: Reading the notes.",
			}
			if !reflect.DeepEqual(got[:2], want) {
				t.Fatalf("transcript starts %q, want %q", got[:2], want)
			}
			tool := strings.Join(got[2:], "\n")
			for _, s := range []string{`"sessionUpdate":"tool_call"`, `"kind":"read"`, `"status":"pending"`, `"status":"in_progress"`,
				`"status":"completed"`, `hello from the workspace`, filepath.Join(ws, "notes.txt")} {
				if !strings.Contains(tool, s) {
					t.Errorf("tool call updates lack %s:\n%s", s, tool)
				}
			}
			if last := got[len(got)-1]; last != "agent_message_chunk: The notes say: hello from the workspace." {
				t.Errorf("last update = %q", last)
			}
			if stop := a.Prompt(sid, "and again?"); stop != "end_turn" {
				t.Fatalf("second stopReason = %q", stop)
			}

			var list struct {
				Sessions []struct {
					SessionID string `json:"sessionId"`
					Title     string `json:"title"`
				} `json:"sessions"`
			}
			a.MustCall("session/list", map[string]any{}, &list)
			if len(list.Sessions) != 1 || list.Sessions[0].SessionID != sid || list.Sessions[0].Title != title {
				t.Fatalf("session/list = %+v", list)
			}
			a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "read-only"}, nil)
			a.MustCall("session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "value": "auto-edit"}, nil)
			var modes []string
			for _, e := range acptest.Log(t, a.DB, sid) {
				if e["kind"] == "mode_changed" {
					p := e["payload"].(map[string]any)
					modes = append(modes, fmt.Sprint(p["from"], "->", p["to"]))
				}
			}
			if want := []string{"ask->read-only", "read-only->auto-edit"}; !slices.Equal(modes, want) {
				t.Fatalf("mode_changed events %v, want %v", modes, want)
			}
			a.MustCall("session/resume", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
			a.MustCall("session/close", map[string]any{"sessionId": sid}, nil)
			before := len(titleUpdates(a.Updates(sid)))
			a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
			if infos := titleUpdates(a.Updates(sid)); len(infos) != before+1 || infos[len(infos)-1] != title {
				t.Fatalf("session/load replayed titles %q, want one more %q", infos[before:], title)
			}
			a.MustCall("_bridle/events", map[string]any{"sessionId": sid}, nil)
			a.MustCall("session/delete", map[string]any{"sessionId": sid}, nil)
			if _, err := a.Call("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}); err == nil || err.Code != -32002 {
				t.Fatalf("load after delete: err = %v, want -32002", err)
			}
			if code := a.CloseStdin(); code != 0 {
				t.Fatalf("exit code after stdin EOF = %d", code)
			}
			a.AssertValid(t)
		})
	}
}

// titleUpdates returns the titles of the session_info_updates received.
func titleUpdates(us []acptest.Update) []string {
	var out []string
	for _, u := range us {
		if u.Kind == "session_info_update" {
			title, _ := u.Fields["title"].(string)
			out = append(out, title)
		}
	}
	return out
}

// events returns the logged events without the fields that differ between
// two runs of the same session (times, ids, paths).
var fileVersion = regexp.MustCompile(`"version":"[0-9:]*"`)

func comparableEvents(t *testing.T, db, sid, ws string) []string {
	var out []string
	for _, e := range acptest.Log(t, db, sid) {
		p, _ := json.Marshal(e["payload"])
		s := strings.ReplaceAll(string(p), sid, "SID")
		s = strings.ReplaceAll(s, ws, "WS")
		// A file's version names its modification time and inode.
		s = fileVersion.ReplaceAllString(s, `"version":"V"`)
		out = append(out, fmt.Sprint(e["seq"], " ", e["kind"], " ", s))
	}
	return out
}

func TestFramingsRecordTheSameEvents(t *testing.T) {
	logs := map[acptest.Framing][]string{}
	for _, f := range []acptest.Framing{acptest.NDJSON, acptest.ContentLength} {
		ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello from the workspace\n"})
		a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, toolTurn), Framing: f})
		a.Initialize()
		sid := a.NewSession(ws)
		a.Prompt(sid, "what do the notes say?")
		a.Prompt(sid, "and again?")
		a.CloseStdin()
		logs[f] = comparableEvents(t, a.DB, sid, ws)
		// The scenario path differs between runs; the model field names it.
		for i, l := range logs[f] {
			if strings.Contains(l, "session_started") {
				logs[f][i] = l[:strings.Index(l, `"model"`)]
			}
		}
	}
	if !reflect.DeepEqual(logs[acptest.NDJSON], logs[acptest.ContentLength]) {
		t.Fatalf("the same session logged differently:\nndjson:\n%s\ncontent-length:\n%s",
			strings.Join(logs[acptest.NDJSON], "\n"), strings.Join(logs[acptest.ContentLength], "\n"))
	}
	if n := len(logs[acptest.NDJSON]); n < 10 {
		t.Fatalf("only %d events logged", n)
	}
}

func TestLoadAfterKillReplaysWhatTheEditorSaw(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello from the workspace\n"})
	model := acptest.Scenario(t, toolTurn)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	a.Prompt(sid, "what do the notes say?")
	a.Prompt(sid, "/constraint keep answers short")
	a.Prompt(sid, "and again?")
	live := acptest.Transcript(a.Updates(sid), "available_commands_update", "usage_update")
	a.Kill()

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	// The editor showed the user's prompts itself; the replay sends them.
	replayed := acptest.Transcript(b.Updates(sid), "available_commands_update", "user_message_chunk", "usage_update")
	if !reflect.DeepEqual(replayed, live) {
		t.Fatalf("replay differs from the live session:\nlive:\n%s\n\nreplayed:\n%s", strings.Join(live, "\n"), strings.Join(replayed, "\n"))
	}
	var prompts []string
	for _, u := range b.Updates(sid) {
		if u.Kind == "user_message_chunk" {
			prompts = append(prompts, u.Text)
		}
	}
	if want := []string{"what do the notes say?", "/constraint keep answers short", "and again?"}; !reflect.DeepEqual(prompts, want) {
		t.Fatalf("replayed prompts = %q, want %q", prompts, want)
	}
	// The session goes on after the restart.
	if stop := b.Prompt(sid, "one more"); stop != "end_turn" {
		t.Fatalf("prompt after load: %s", stop)
	}
	b.AssertValid(t)
}

func TestCancelKeepsPartialTextAndTheSessionUsable(t *testing.T) {
	cancels := []struct {
		name   string
		cancel func(a *acptest.Agent, sid, requestID string)
	}{
		{"session/cancel", func(a *acptest.Agent, sid, _ string) { a.Notify("session/cancel", map[string]string{"sessionId": sid}) }},
		{"$/cancel_request", func(a *acptest.Agent, _, id string) {
			a.Notify("$/cancel_request", map[string]any{"requestId": json.RawMessage(id)})
		}},
		{"$/cancelRequest (LSP)", func(a *acptest.Agent, _, id string) {
			a.Notify("$/cancelRequest", map[string]any{"id": json.RawMessage(id)})
		}},
		{"session/close", func(a *acptest.Agent, sid, _ string) {
			go a.Call("session/close", map[string]string{"sessionId": sid})
		}},
	}
	for _, c := range cancels {
		t.Run(c.name, func(t *testing.T) {
			ws := acptest.Workspace(t, nil)
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, slowTurn)})
			a.Initialize()
			sid := a.NewSession(ws)
			id, answer := a.Request("session/prompt", acptest.PromptParams(sid, "count slowly"))
			a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), "two ") })
			c.cancel(a, sid, id)
			res, rerr := a.Wait(answer)
			if rerr != nil {
				t.Fatalf("cancelled prompt answered with an error: %v", rerr)
			}
			if !strings.Contains(string(res), `"cancelled"`) {
				t.Fatalf("cancelled prompt answered %s", res)
			}
			if c.name == "session/close" {
				// Closed sessions come back with session/load.
				a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
			}
			if stop := a.Prompt(sid, "go on"); stop != "end_turn" {
				t.Fatalf("prompt after cancel: %s", stop)
			}
			events := acptest.Log(t, a.DB, sid)
			kinds := acptest.Kinds(events)
			if !strings.Contains(kinds, "user_message context_assembled interrupted turn_finished user_message context_assembled assistant_message turn_finished") {
				t.Fatalf("events = %s", kinds)
			}
			for _, e := range events {
				if e["kind"] == "interrupted" {
					p := e["payload"].(map[string]any)
					if text, _ := p["text"].(string); !strings.HasPrefix(text, "one two ") || strings.Contains(text, "ten") {
						t.Fatalf("interrupted text = %q, want the streamed part only", text)
					}
				}
			}
			a.AssertValid(t)
		})
	}
}

func TestExitPaths(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	t.Run("LSP shutdown then exit", func(t *testing.T) {
		a := acptest.Start(t, acptest.Options{Model: "scripted/demo", Framing: acptest.ContentLength})
		a.Initialize()
		if _, err := a.Call("shutdown", nil); err != nil {
			t.Fatal(err)
		}
		a.Notify("exit", nil)
		if code := a.WaitExit(); code != 0 {
			t.Fatalf("exit code = %d, want 0", code)
		}
	})
	t.Run("LSP exit without shutdown", func(t *testing.T) {
		a := acptest.Start(t, acptest.Options{Model: "scripted/demo", Framing: acptest.ContentLength})
		a.Initialize()
		a.Notify("exit", nil)
		if code := a.WaitExit(); code != 1 {
			t.Fatalf("exit code = %d, want 1 (LSP: exit without shutdown)", code)
		}
	})
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String()+" during a turn", func(t *testing.T) {
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, slowTurn)})
			a.Initialize()
			sid := a.NewSession(ws)
			a.Request("session/prompt", acptest.PromptParams(sid, "count slowly"))
			a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), "one ") })
			start := time.Now()
			a.Signal(sig)
			if code := a.WaitExit(); code != 0 {
				t.Fatalf("exit code = %d", code)
			}
			t.Logf("exited %v after %s", time.Since(start), sig)
			if kinds := acptest.Kinds(acptest.Log(t, a.DB, sid)); !strings.HasSuffix(kinds, "user_message context_assembled interrupted turn_finished") {
				t.Fatalf("the turn was not recorded as interrupted: %s", kinds)
			}
		})
	}
}

// TestASessionIsLoadedWhileItsLastProcessCloses: an editor restarting
// bridle (a window reloaded) starts the new process while the old one is
// still closing; the new one's session/load waits for the old one to
// record how its turn ended and let the session go, rather than answer
// that another process has it.
func TestASessionIsLoadedWhileItsLastProcessCloses(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	model := acptest.Scenario(t, slowTurn)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	a.Request("session/prompt", acptest.PromptParams(sid, "count slowly"))
	a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), "one ") })

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	_, load := b.Request("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}})
	a.Signal(syscall.SIGTERM) // the editor closes the old process
	if _, err := b.Wait(load); err != nil {
		t.Fatalf("session/load while the old process closed: %v", err)
	}
	if code := a.WaitExit(); code != 0 {
		t.Fatalf("the old process exited %d", code)
	}
	if kinds := acptest.Kinds(acptest.Log(t, a.DB, sid)); !strings.HasSuffix(kinds, "interrupted turn_finished") {
		t.Fatalf("the old process's turn was not closed before the new one took the session: %s", kinds)
	}
	if stop := b.Prompt(sid, "and now?"); stop != "end_turn" {
		t.Fatalf("a prompt in the new process ended %q", stop)
	}
}

func TestOneProcessServesASessionAtATime(t *testing.T) {
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello\n"})
	model := acptest.Scenario(t, toolTurn)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	a.Prompt(sid, "what do the notes say?")

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	load := map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}
	_, err := b.Call("session/load", load)
	if err == nil || !strings.Contains(err.Message, "another bridle process") {
		t.Fatalf("loading a session another live process serves: %v", err)
	}
	// Both can list it, and b can start its own sessions meanwhile.
	b.NewSession(ws)

	a.MustCall("session/close", map[string]any{"sessionId": sid}, nil)
	b.MustCall("session/load", load, nil)
	if _, err := a.Call("session/load", load); err == nil {
		t.Fatal("the first process took the session back while the second serves it")
	}

	// A crashed holder does not keep the session forever.
	b.Kill()
	c := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	c.Initialize()
	c.MustCall("session/load", load, nil)
	if stop := c.Prompt(sid, "and again?"); stop != "end_turn" {
		t.Fatalf("prompt after takeover: %s", stop)
	}
}
