package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// errorAnswers returns the error answers bridle sent that the harness
// could not match to one of its requests (null ids, or ids the test wrote
// itself), in order.
func errorAnswers(a *acptest.Agent) []acptest.Msg {
	var out []acptest.Msg
	for _, m := range a.Notes() {
		if m.Method == "" && m.Error != nil {
			out = append(out, m)
		}
	}
	return out
}

// answersTo returns the answers bridle sent for the id the test wrote
// itself (a JSON value, e.g. `"dup"`), in order.
func answersTo(a *acptest.Agent, id string) []acptest.Msg {
	var out []acptest.Msg
	for _, m := range a.Notes() {
		if m.Method == "" && m.ID != nil && string(*m.ID) == id {
			out = append(out, m)
		}
	}
	return out
}

// waitAnswersTo waits until bridle has sent n answers for id.
func waitAnswersTo(t *testing.T, a *acptest.Agent, id string, n int) []acptest.Msg {
	t.Helper()
	a.WaitNote(func(acptest.Msg) bool {
		c := 0
		for _, m := range a.NotesLocked() {
			if m.Method == "" && m.ID != nil && string(*m.ID) == id {
				c++
			}
		}
		return c >= n
	})
	return answersTo(a, id)
}

// fiveRequests sends five session/list requests and reports how many
// were answered within the deadline (without failing on a timeout, so a
// desynchronised connection reads as a count, not a hang).
func fiveRequests(t *testing.T, a *acptest.Agent, within time.Duration) int {
	t.Helper()
	var chans []<-chan acptest.Msg
	for range 5 {
		_, ch := a.Request("session/list", map[string]any{})
		chans = append(chans, ch)
	}
	deadline := time.After(within)
	n := 0
	for _, ch := range chans {
		select {
		case m, ok := <-ch:
			if !ok {
				return n
			}
			if m.Error != nil {
				t.Errorf("a valid session/list was answered %v", m.Error)
			}
			n++
		case <-deadline:
			return n
		}
	}
	return n
}

func codesOf(ms []acptest.Msg) []int {
	var out []int
	for _, m := range ms {
		out = append(out, m.Error.Code)
	}
	return out
}

// TestHeaderLiesAreAnsweredAndTheStreamResynchronises extends the bad
// input fuzzing to the framing itself: for each lie a header block (or,
// in NDJSON, a line) can tell about the message after it, bridle answers
// the lie and serves every valid message that follows.
func TestHeaderLiesAreAnsweredAndTheStreamResynchronises(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":"lie","method":"session/list","params":{}}`
	n := len(body)
	cl := func(head string) string { return head + "\r\n\r\n" + body }
	type lie struct {
		name  string
		raw   string
		codes []int  // the error answers, in order
		says  string // in the first one
	}
	lies := map[acptest.Framing][]lie{
		acptest.ContentLength: {
			{"not a number", cl("Content-Length: abc"), []int{-32700}, "not a decimal number"},
			{"too short", cl("Content-Length: " + strconv.Itoa(n-12)), []int{-32700}, "not valid JSON"},
			{"too long", cl("Content-Length: " + strconv.Itoa(n+12)), []int{-32600}, fmt.Sprintf("said %d, the message ended after %d bytes", n+12, n)},
			{"zero", cl("Content-Length: 0"), []int{-32600, -32700}, "empty message"},
			{"negative", cl("Content-Length: -" + strconv.Itoa(n)), []int{-32700}, "not a decimal number"},
			{"float", cl("Content-Length: " + strconv.Itoa(n) + ".0"), []int{-32700}, "not a decimal number"},
			{"hex", cl("Content-Length: 0x" + strconv.FormatInt(int64(n), 16)), []int{-32700}, "not a decimal number"},
			{"huge", cl("Content-Length: 99999999999"), []int{-32600}, "64 MiB limit"},
			{"beyond int64", cl("Content-Length: 999999999999999999999999999999"), []int{-32600}, "64 MiB limit"},
			{"missing", cl("Content-Type: application/vscode-jsonrpc; charset=utf-8"), []int{-32700}, "no Content-Length"},
			{"no colon", cl("Content-Length " + strconv.Itoa(n)), []int{-32700}, "no colon"},
			{"NUL", cl("Content-Length: \x00" + strconv.Itoa(n)), []int{-32700}, "control character"},
			{"name not a token", cl("Content Length: " + strconv.Itoa(n)), []int{-32700}, "HTTP token"},
			{"two lengths", cl("Content-Length: " + strconv.Itoa(n) + "\r\nContent-Length: " + strconv.Itoa(n+1)), []int{-32700}, "two different"},
			{"line too long", cl("Content-Length: " + strconv.Itoa(n) + "\r\nX-Pad: " + strings.Repeat("a", 4000)), []int{-32700}, "longer than 1024 bytes"},
			{"too many lines", cl("Content-Length: " + strconv.Itoa(n) + strings.Repeat("\r\nX-A: b", 40)), []int{-32700}, "more than 32 lines"},
			{"no header block", body + "\r\n", []int{-32700}, "HTTP token"},
		},
		acptest.NDJSON: {
			{"two messages on one line", body + body + "\n", []int{-32700}, "not valid JSON"},
			{"trailing garbage", body + "xyz\n", []int{-32700}, "not valid JSON"},
			{"cut short", body[:n-12] + "\n", []int{-32700}, "not valid JSON"},
			{"NUL", body[:10] + "\x00" + body[10:] + "\n", []int{-32700}, "not valid JSON"},
			{"a Content-Length header on an NDJSON connection", cl("Content-Length: "+strconv.Itoa(n)) + "\n", []int{-32700}, "not valid JSON"},
			{"a 10 MB line", strings.Repeat("x", 10<<20) + "\n", []int{-32700}, "not valid JSON"},
		},
	}
	for _, framing := range []acptest.Framing{acptest.ContentLength, acptest.NDJSON} {
		for _, l := range lies[framing] {
			t.Run(fmt.Sprintf("framing %d %s", framing, l.name), func(t *testing.T) {
				a := acptest.Start(t, acptest.Options{Model: "scripted/demo", Framing: framing})
				a.Initialize()
				a.WriteRaw([]byte(l.raw))
				if got := fiveRequests(t, a, 10*time.Second); got != 5 {
					t.Fatalf("%d of the 5 valid requests after the lie were answered", got)
				}
				// Answers go out in the order messages are read, so the
				// lie's are in by now.
				errs := errorAnswers(a)
				if fmt.Sprint(codesOf(errs)) != fmt.Sprint(l.codes) {
					t.Fatalf("the lie was answered with codes %v, want %v: %v", codesOf(errs), l.codes, errs)
				}
				if !strings.Contains(errs[0].Error.Message, l.says) {
					t.Errorf("answer %q does not say %q", errs[0].Error.Message, l.says)
				}
				for _, e := range errs {
					if e.ID != nil && string(*e.ID) != `"lie"` {
						t.Errorf("error answer with id %s", *e.ID)
					}
				}
				a.AssertValid(t)
			})
		}
	}
}

// TestLongHeaderLineIsDroppedNotHeld: a header line without a newline is
// answered once it passes the line limit, and the messages after it are
// served. (Peak RSS is logged for the record; it is not asserted.)
func TestLongHeaderLineIsDroppedNotHeld(t *testing.T) {
	a := acptest.Start(t, acptest.Options{Model: "scripted/demo", Framing: acptest.ContentLength})
	a.Initialize()
	before := peakRSS(t, a.Cmd.Process.Pid)
	a.WriteRaw([]byte(strings.Repeat("x", 10<<20)))
	if got := fiveRequests(t, a, 20*time.Second); got != 5 {
		t.Fatalf("%d of the 5 valid requests after a 10 MB header line were answered", got)
	}
	errs := errorAnswers(a)
	if len(errs) != 1 || errs[0].Error.Code != -32700 || !strings.Contains(errs[0].Error.Message, "longer than 1024 bytes") {
		t.Fatalf("answers to the long line: %v", errs)
	}
	t.Logf("peak RSS %d MiB before the 10 MB header line, %d MiB after", before>>20, peakRSS(t, a.Cmd.Process.Pid)>>20)
}

// nullIDScenario needs one approval: write_file in the default mode.
const nullIDScenario = `{"turns": [{"calls": [
	{"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "A\n"}}]},
	{"text": "Written."}
]}]}`

// TestRepliesThatAnswerNothingBridleAskedAreIgnored: while a permission
// request waits for the user, the client sends replies with a null id, no
// id, id 0 and ids bridle never used. None of them answers the question;
// the user's answer, when it comes, does.
func TestRepliesThatAnswerNothingBridleAskedAreIgnored(t *testing.T) {
	for _, framing := range []acptest.Framing{acptest.NDJSON, acptest.ContentLength} {
		t.Run(fmt.Sprint("framing ", framing), func(t *testing.T) {
			ws := acptest.Workspace(t, nil)
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, nullIDScenario), Framing: framing})
			asked := make(chan json.RawMessage, 1)
			release := make(chan struct{})
			a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
				asked <- *m.ID
				<-release
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}, nil
			}
			a.Initialize()
			sid := a.NewSession(ws)
			_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "write a"))
			id := <-asked
			if n, err := strconv.Atoi(string(id)); err != nil || n < 1 {
				t.Errorf("bridle's first request has id %s; want a number from 1 (a null id reads as 0)", id)
			}
			cancel := `{"outcome":{"outcome":"cancelled"}}`
			for _, reply := range []string{
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"an error about something else"}}`,
				`{"jsonrpc":"2.0","error":{"code":-32603,"message":"an error without an id"}}`,
				`{"jsonrpc":"2.0","id":null,"result":` + cancel + `}`,
				`{"jsonrpc":"2.0","id":0,"result":` + cancel + `}`,
				`{"jsonrpc":"2.0","id":4242,"result":` + cancel + `}`,
				`{"jsonrpc":"2.0","id":"` + string(id) + `","result":` + cancel + `}`,
				`{"jsonrpc":"2.0","id":-1,"result":` + cancel + `}`,
				`{"id":` + string(id) + `,"result":` + cancel + `}`,
			} {
				a.WriteFrame([]byte(reply))
			}
			// The connection reads on, and answers none of those replies.
			if got := fiveRequests(t, a, 10*time.Second); got != 5 {
				t.Fatalf("%d of 5 requests answered after the stray replies", got)
			}
			if errs := errorAnswers(a); len(errs) != 0 {
				t.Errorf("bridle answered a reply: %v", errs)
			}
			select {
			case m := <-answer:
				t.Fatalf("the prompt ended before the user answered: %s %v", m.Result, m.Error)
			default:
			}
			close(release)
			res, rerr := a.Wait(answer)
			if rerr != nil || !strings.Contains(string(res), "end_turn") {
				t.Fatalf("prompt answered %s %v", res, rerr)
			}
			if got := readFile(t, ws, "a.txt"); got != "A\n" {
				t.Fatalf("a.txt = %q: the user's allow did not count", got)
			}
			r := toolResults(t, a.DB, sid)
			if len(r) != 1 || r[0]["status"] != "completed" {
				t.Fatalf("tool results = %v", r)
			}
			a.AssertValid(t)
		})
	}
}

// TestRequestWithNullIDIsRefusedNotRun: a request whose id is null is
// neither a notification nor answerable; it is refused with a null id.
func TestRequestWithNullIDIsRefusedNotRun(t *testing.T) {
	for _, framing := range []acptest.Framing{acptest.NDJSON, acptest.ContentLength} {
		t.Run(fmt.Sprint("framing ", framing), func(t *testing.T) {
			ws := acptest.Workspace(t, nil)
			a := acptest.Start(t, acptest.Options{Model: "scripted/demo", Framing: framing})
			a.Initialize()
			req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "method": "session/new",
				"params": map[string]any{"cwd": ws, "mcpServers": []any{}}})
			a.WriteFrame(req)
			err := nullIDError(t, a, 0)
			if err.Code != -32600 || !strings.Contains(err.Message, "leave it out for a notification") {
				t.Fatalf("a request with a null id was answered %v", err)
			}
			var list struct {
				Sessions []any `json:"sessions"`
			}
			a.MustCall("session/list", map[string]any{}, &list)
			if len(list.Sessions) != 0 {
				t.Fatalf("the refused session/new ran: %d sessions", len(list.Sessions))
			}
			a.AssertValid(t)
		})
	}
}

// TestPermissionErrorIsAClientErrorNotACancel: an editor that answers
// session/request_permission with an error never asked the user; the
// model is told so, and the log says so, instead of "cancelled by user".
func TestPermissionErrorIsAClientErrorNotACancel(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, nullIDScenario)})
	a.OnRequest = func(acptest.Msg) (any, *acptest.RPCError) {
		return nil, &acptest.RPCError{Code: -32603, Message: "the permission dialog crashed"}
	}
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "write a"); stop != "end_turn" {
		t.Fatalf("stop = %s", stop)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err == nil {
		t.Fatal("the call ran without an answer")
	}
	r := toolResults(t, a.DB, sid)
	if len(r) != 1 {
		t.Fatalf("tool results = %v", r)
	}
	out, _ := r[0]["output"].(string)
	if !strings.Contains(out, "the editor failed to ask the user") || !strings.Contains(out, "-32603") ||
		!strings.Contains(out, "the permission dialog crashed") || strings.Contains(out, "cancelled") {
		t.Fatalf("the model was told %q, want a client error", out)
	}
	var denied map[string]any
	for _, e := range acptest.Log(t, a.DB, sid) {
		if e["kind"] == "approval_denied" {
			denied = e["payload"].(map[string]any)
		}
	}
	if denied == nil || denied["scope"] != "client_error" || denied["cancelled"] == true {
		t.Fatalf("approval_denied = %v, want scope client_error", denied)
	}
	// The editor's card shows the same text.
	found := false
	for _, u := range a.Updates(sid) {
		if u.Kind == "tool_call_update" && strings.Contains(fmt.Sprint(u.Fields["content"]), "the editor failed to ask the user") {
			found = true
		}
	}
	if !found {
		t.Error("no tool_call_update shows the client error")
	}
	a.AssertValid(t)
}

// TestSessionCancelSentAsARequestCancelsAndIsAnswered: session/cancel is
// a notification, but a client that sends it with an id still means it and
// waits for an answer: the turn is cancelled and the request answered null.
func TestSessionCancelSentAsARequestCancelsAndIsAnswered(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, slowTurn)})
	a.Initialize()
	sid := a.NewSession(ws)
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "count slowly"))
	a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), "two ") })
	res, err := a.Call("session/cancel", map[string]string{"sessionId": sid})
	if err != nil || string(res) != "null" {
		t.Fatalf("session/cancel as a request answered %s %v, want null", res, err)
	}
	res, err = a.Wait(answer)
	if err != nil || !strings.Contains(string(res), `"cancelled"`) {
		t.Fatalf("the prompt answered %s %v, want cancelled", res, err)
	}
	if _, err := a.Call("session/cancel", map[string]any{}); err == nil || err.Code != -32602 {
		t.Errorf("session/cancel without a sessionId answered %v", err)
	}
	a.AssertValid(t)
}

// TestDuplicateRequestIDWhileInFlight: request ids are the client's, per
// connection. A prompt that reuses the id of one still running is
// refused, so $/cancel_request with that id reaches the running one; once
// it has finished, the id may be used again.
func TestDuplicateRequestIDWhileInFlight(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, slowTurn)})
	a.Initialize()
	first, second := a.NewSession(ws), a.NewSession(ws)
	prompt := func(sid string) []byte {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "dup", "method": "session/prompt", "params": acptest.PromptParams(sid, "count slowly")})
		return b
	}
	a.WriteFrame(prompt(first))
	a.WaitNote(func(m acptest.Msg) bool {
		return strings.Contains(string(m.Params), first) && strings.Contains(string(m.Params), "two ")
	})
	a.WriteFrame(prompt(second))
	got := waitAnswersTo(t, a, `"dup"`, 1)
	if got[0].Error == nil || got[0].Error.Code != -32600 || !strings.Contains(got[0].Error.Message, "still running") {
		t.Fatalf("a second prompt with an id in flight was answered %s %v, want -32600", got[0].Result, got[0].Error)
	}
	a.Notify("$/cancel_request", map[string]any{"requestId": "dup"})
	got = waitAnswersTo(t, a, `"dup"`, 2)
	if got[1].Error != nil || !strings.Contains(string(got[1].Result), `"cancelled"`) {
		t.Fatalf("the running prompt answered %s %v, want cancelled", got[1].Result, got[1].Error)
	}
	for _, u := range a.Updates(second) {
		if strings.HasPrefix(u.Kind, "agent_message") {
			t.Fatalf("the refused prompt ran: %v", u)
		}
	}
	// The id is free again.
	a.WriteFrame(prompt(second))
	got = waitAnswersTo(t, a, `"dup"`, 3)
	if got[2].Error != nil || !strings.Contains(string(got[2].Result), "end_turn") {
		t.Fatalf("the prompt after the first finished answered %s %v", got[2].Result, got[2].Error)
	}
	a.AssertValid(t)
}

// TestUserErrorsHaveTheirOwnCodes: a busy session, a prompt that does not
// fit the window and a _meta that is not an object are the client's to
// fix, not internal errors or malformed requests.
func TestUserErrorsHaveTheirOwnCodes(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	t.Run("busy", func(t *testing.T) {
		a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, slowTurn)})
		a.Initialize()
		sid := a.NewSession(ws)
		_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "count slowly"))
		a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), "one ") })
		_, err := a.Call("session/prompt", acptest.PromptParams(sid, "and another"))
		if err == nil || err.Code != -32001 || !strings.Contains(err.Message, "already running") {
			t.Fatalf("a second prompt to a busy session answered %v, want -32001", err)
		}
		a.Notify("session/cancel", map[string]string{"sessionId": sid})
		a.Wait(answer)
	})
	t.Run("too big for the window", func(t *testing.T) {
		model := acptest.Scenario(t, `{"model": {"window": 4000, "max_output": 500}, "turns": [{"calls": [{"text": "never"}]}]}`)
		a := acptest.Start(t, acptest.Options{Model: model})
		a.Initialize()
		sid := a.NewSession(ws)
		_, err := a.Call("session/prompt", acptest.PromptParams(sid, strings.Repeat("far too many words here ", 3000)))
		// "does not fit the model's context window" from assembling the
		// request; main also refuses such a prompt earlier, as "too large
		// for the model's context window": both are -32602.
		if err == nil || err.Code != -32602 || !strings.Contains(err.Message, "context window") {
			t.Fatalf("a prompt too big for the window answered %v, want -32602", err)
		}
		a.AssertValid(t)
	})
	t.Run("_meta not an object", func(t *testing.T) {
		a := acptest.Start(t, acptest.Options{Model: "scripted/demo"})
		a.Initialize()
		for _, c := range []struct {
			method string
			params map[string]any
		}{
			{"session/list", map[string]any{"_meta": 5}},
			{"initialize", map[string]any{"protocolVersion": 1, "_meta": "x"}},
			{"session/new", map[string]any{"cwd": ws, "mcpServers": []any{}, "_meta": []any{}}},
			{"session/close", map[string]any{"sessionId": "ses_x", "_meta": true}},
		} {
			_, err := a.Call(c.method, c.params)
			if err == nil || err.Code != -32602 || !strings.Contains(err.Message, "_meta") {
				t.Errorf("%s with _meta %v answered %v, want -32602", c.method, c.params["_meta"], err)
			}
		}
		if _, err := a.Call("session/list", map[string]any{"_meta": map[string]any{"x": 1}}); err != nil {
			t.Errorf("an object _meta was refused: %v", err)
		}
		if _, err := a.Call("session/list", map[string]any{"_meta": nil}); err != nil {
			t.Errorf("a null _meta was refused: %v", err)
		}
		a.AssertValid(t)
	})
}

// TestEventsShowWhenALiveSessionStarted: _bridle/events gives the real
// time of session_started for a session created by this process.
func TestEventsShowWhenALiveSessionStarted(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	a := acptest.Start(t, acptest.Options{Model: "scripted/demo"})
	a.Initialize()
	before := time.Now().Add(-time.Minute)
	sid := a.NewSession(ws)
	var resp struct {
		Events []struct {
			Kind string `json:"kind"`
			Time string `json:"time"`
		} `json:"events"`
	}
	a.MustCall("_bridle/events", map[string]any{"sessionId": sid}, &resp)
	if len(resp.Events) == 0 || resp.Events[0].Kind != "session_started" {
		t.Fatalf("events = %+v", resp.Events)
	}
	at, err := time.Parse(time.RFC3339Nano, resp.Events[0].Time)
	if err != nil || at.Before(before) || at.After(time.Now().Add(time.Minute)) {
		t.Fatalf("session_started at %q, want about now", resp.Events[0].Time)
	}
}
