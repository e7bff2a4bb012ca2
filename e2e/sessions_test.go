package e2e

import (
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	_ "modernc.org/sqlite" // the test writes what an older bridle left in a database

	"github.com/bridle-dev/bridle/internal/acptest"
)

// maxTitle is the bound on a session's title (store.MaxTitle).
const maxTitle = 80

// TestForkTitlesStayBounded: each fork of a fork names its parent without
// quoting it, so the titles stay within the bound a first prompt's title
// has (quoting doubled the escapes at each level: 134 MB at depth 25);
// and a title an older bridle stored longer is listed and loaded cut.
func TestForkTitlesStayBounded(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	model := acptest.Scenario(t, `{"turns": [{"match": "go", "calls": [{"text": "ok"}]}]}`)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	for _, p := range []string{`go: say "hi" \ there`, "go on"} {
		if stop := a.Prompt(sid, p); stop != "end_turn" {
			t.Fatalf("%s: %s", p, stop)
		}
	}
	cur := sid
	for depth := 1; depth <= 12; depth++ {
		var fork struct {
			SessionID string `json:"sessionId"`
			Title     string `json:"title"`
		}
		a.MustCall("_bridle/fork", map[string]any{"sessionId": cur, "prompt": 2}, &fork)
		if n := utf8.RuneCountInString(fork.Title); n > maxTitle || strings.Contains(fork.Title, `\"`) || !strings.HasSuffix(fork.Title, "before prompt 2") {
			t.Fatalf("depth %d: a fork titled %d characters, over %d or quoting its parent's: %.200q", depth, n, maxTitle, fork.Title)
		}
		if stop := a.Prompt(fork.SessionID, "go again"); stop != "end_turn" {
			t.Fatalf("depth %d: %s", depth, stop)
		}
		cur = fork.SessionID
	}
	titles := listTitles(t, a)
	if len(titles) != 13 {
		t.Fatalf("session/list shows %d sessions, want 13", len(titles))
	}
	for id, title := range titles {
		if utf8.RuneCountInString(title) > maxTitle {
			t.Errorf("session/list: %s is titled %d characters", id, utf8.RuneCountInString(title))
		}
	}
	a.AssertValid(t)
}

// TestLongStoredTitlesAreReadCut: a title an older bridle stored longer
// than the bound (a fork title doubled at each level) is listed and
// loaded cut to the bound, without reading it whole.
func TestLongStoredTitlesAreReadCut(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	model := acptest.Scenario(t, `{"turns": [{"match": "go", "calls": [{"text": "ok"}]}]}`)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	a.Prompt(sid, "go")
	a.CloseStdin()
	a.WaitExit()

	db, err := sql.Open("sqlite", a.DB)
	if err != nil {
		t.Fatal(err)
	}
	huge := "Fork of " + strings.Repeat(`\"`, 4<<20)
	if _, err := db.Exec(`UPDATE sessions SET title = ? WHERE id = ?`, huge, sid); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	if got := listTitles(t, b)[sid]; got != huge[:maxTitle] {
		t.Errorf("session/list of a title stored at %d bytes: %d bytes, want its first %d characters", len(huge), len(got), maxTitle)
	}
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	titled := 0
	for _, u := range b.Updates(sid) {
		if title, ok := u.Fields["title"].(string); ok && u.Kind == "session_info_update" {
			titled++
			if title != huge[:maxTitle] {
				t.Errorf("session/load sent a title of %d bytes, want its first %d characters", len(title), maxTitle)
			}
		}
	}
	if titled == 0 {
		t.Errorf("session/load sent no title")
	}
	b.AssertValid(t)
}

// listTitles returns session/list's titles by session id.
func listTitles(t *testing.T, a *acptest.Agent) map[string]string {
	t.Helper()
	var list struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Title     string `json:"title"`
		} `json:"sessions"`
	}
	a.MustCall("session/list", map[string]any{}, &list)
	out := map[string]string{}
	for _, s := range list.Sessions {
		out[s.SessionID] = s.Title
	}
	return out
}

const deleteScenario = `{"turns": [
	{"match": "DELEGATE", "calls": [` + `{"tool_calls": [{"name": "task", "input": {"description": "look", "prompt": "SUBTASK-D"}}]}` + `, {"text": "delegated"}]},
	{"match": "SUBTASK-D", "calls": [{"text": "the child's answer"}]},
	{"match": "SLOW-ONE", "calls": [{"text": ["w1a ", "w1b ", "w1c ", "w1d ", "w1e ", "w1f ", "w1g ", "w1h ", "w1i ", "w1j "], "delay_ms": 200}]},
	{"match": "SLOW-TWO", "calls": [{"text": ["w2a ", "w2b ", "w2c ", "w2d ", "w2e ", "w2f ", "w2g ", "w2h ", "w2i ", "w2j "], "delay_ms": 200}]},
	{"match": "go", "calls": [{"text": "ok"}]}
]}`

// deleteRig is a session served by one bridle (a) with a second bridle
// (b) on the same database.
type deleteRig struct {
	a, b    *acptest.Agent
	sid, ws string
}

func newDeleteRig(t *testing.T) *deleteRig {
	ws := acptest.Workspace(t, nil)
	model := acptest.Scenario(t, deleteScenario)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "go"); stop != "end_turn" {
		t.Fatalf("first prompt: %s", stop)
	}
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	return &deleteRig{a: a, b: b, sid: sid, ws: ws}
}

// deleteWhileRunning starts a slow turn in a, asks c to delete the
// session once the turn has begun, and says how the delete and the turn
// ended.
func (r *deleteRig) deleteWhileRunning(c *acptest.Agent, prompt, word string) (derr *acptest.RPCError, stop string, perr *acptest.RPCError) {
	_, answer := r.a.Request("session/prompt", acptest.PromptParams(r.sid, prompt))
	r.a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), word) })
	_, derr = c.Call("session/delete", map[string]any{"sessionId": r.sid})
	res, perr := r.a.Wait(answer)
	var out struct {
		StopReason string `json:"stopReason"`
	}
	json.Unmarshal(res, &out)
	return derr, out.StopReason, perr
}

// TestDeleteFromAnotherProcessIsRefused: a session another bridle process
// serves is not deleted (-32001, as for a prompt), and the turn it runs
// ends as it would have, as does the next; once that process has closed
// the session, the other deletes it.
func TestDeleteFromAnotherProcessIsRefused(t *testing.T) {
	r := newDeleteRig(t)
	derr, stop, perr := r.deleteWhileRunning(r.b, "SLOW-ONE", "w1a ")
	if derr == nil || derr.Code != -32001 || !strings.Contains(derr.Message, "another bridle process") {
		t.Errorf("deleting a session another process runs: %v, want -32001 naming the other process", derr)
	}
	if perr != nil || stop != "end_turn" {
		t.Errorf("the running turn, after a delete from another process: %q, %v", stop, perr)
	}
	if _, err := r.a.Call("session/prompt", acptest.PromptParams(r.sid, "go again")); err != nil {
		t.Errorf("the next prompt after a delete from another process: %v", err)
	}
	// Idle, the session is still served by a.
	if _, derr := r.b.Call("session/delete", map[string]any{"sessionId": r.sid}); derr == nil || derr.Code != -32001 {
		t.Errorf("deleting a session another process serves, idle: %v, want -32001", derr)
	}
	if kinds := acptest.Kinds(acptest.Log(t, r.a.DB, r.sid)); strings.Count(kinds, "turn_finished") != 3 || strings.Contains(kinds, "interrupted") {
		t.Errorf("the session's log after the refused deletes: %s", kinds)
	}

	r.a.MustCall("session/close", map[string]any{"sessionId": r.sid}, nil)
	r.b.MustCall("session/delete", map[string]any{"sessionId": r.sid}, nil)
	if _, err := r.a.Call("session/load", map[string]any{"sessionId": r.sid, "cwd": r.ws, "mcpServers": []any{}}); err == nil || err.Code != -32002 {
		t.Errorf("loading a deleted session: %v, want -32002", err)
	}
	r.a.AssertValid(t)
	r.b.AssertValid(t)
}

// TestRefusedDeleteLeavesTheTurnRunning: a delete refused because the
// session has a fork does not first cancel the running turn, whichever
// process asks.
func TestRefusedDeleteLeavesTheTurnRunning(t *testing.T) {
	r := newDeleteRig(t)
	var fork struct {
		SessionID string `json:"sessionId"`
	}
	r.a.MustCall("_bridle/fork", map[string]any{"sessionId": r.sid, "prompt": 1}, &fork)
	derr, stop, perr := r.deleteWhileRunning(r.a, "SLOW-ONE", "w1a ")
	if derr == nil || derr.Code != -32602 || !strings.Contains(derr.Message, "delete the fork first") {
		t.Errorf("deleting a session with a fork: %v, want -32602", derr)
	}
	if perr != nil || stop != "end_turn" {
		t.Errorf("the running turn, after a refused delete in its own process: %q, %v", stop, perr)
	}
	derr, stop, perr = r.deleteWhileRunning(r.b, "SLOW-TWO", "w2a ")
	if derr == nil || (derr.Code != -32001 && derr.Code != -32602) {
		t.Errorf("deleting, from another process, a session with a fork: %v, want it refused", derr)
	}
	if perr != nil || stop != "end_turn" {
		t.Errorf("the running turn, after a refused delete from another process: %q, %v", stop, perr)
	}
	if kinds := acptest.Kinds(acptest.Log(t, r.a.DB, r.sid)); strings.Count(kinds, "turn_finished") != 3 || strings.Contains(kinds, "interrupted") {
		t.Errorf("the session's log after the refused deletes: %s", kinds)
	}
	// Once the fork is gone, the session is deleted here.
	r.a.MustCall("session/delete", map[string]any{"sessionId": fork.SessionID}, nil)
	r.a.MustCall("session/delete", map[string]any{"sessionId": r.sid}, nil)
	r.a.AssertValid(t)
	r.b.AssertValid(t)
}

// TestDeleteRefusedForAChildLeavesTheTurnRunning: a session whose
// subagent's session another live bridle process has open is not deleted
// (-32001), and the refusal comes before anything is stopped: the
// session's running turn ends as it would have. Once that process has
// closed the child, the delete goes through, the child with it.
func TestDeleteRefusedForAChildLeavesTheTurnRunning(t *testing.T) {
	r := newDeleteRig(t)
	if stop := r.a.Prompt(r.sid, "DELEGATE a look"); stop != "end_turn" {
		t.Fatalf("DELEGATE: %s", stop)
	}
	child := childOf(t, acptest.Log(t, r.a.DB, r.sid))
	r.b.MustCall("session/load", map[string]any{"sessionId": child, "cwd": r.ws, "mcpServers": []any{}}, nil)

	derr, stop, perr := r.deleteWhileRunning(r.a, "SLOW-ONE", "w1a ")
	if derr == nil || derr.Code != -32001 || !strings.Contains(derr.Message, child) || !strings.Contains(derr.Message, "another bridle process") {
		t.Errorf("deleting a session whose child another process has open: %v, want -32001 naming the child", derr)
	}
	if perr != nil || stop != "end_turn" {
		t.Errorf("the running turn, after a delete refused for its child: %q, %v; want end_turn (nothing stopped)", stop, perr)
	}
	if kinds := acptest.Kinds(acptest.Log(t, r.a.DB, r.sid)); strings.Count(kinds, "turn_finished") != 3 || strings.Contains(kinds, "interrupted") {
		t.Errorf("the session's log after the refused delete: %s", kinds)
	}
	if _, err := r.a.Call("session/prompt", acptest.PromptParams(r.sid, "go again")); err != nil {
		t.Errorf("the next prompt after the refused delete: %v", err)
	}

	r.b.MustCall("session/close", map[string]any{"sessionId": child}, nil)
	r.a.MustCall("session/delete", map[string]any{"sessionId": r.sid}, nil)
	if _, err := r.b.Call("session/load", map[string]any{"sessionId": child, "cwd": r.ws, "mcpServers": []any{}}); err == nil || err.Code != -32002 {
		t.Errorf("loading the deleted session's child: %v, want -32002", err)
	}
	r.a.AssertValid(t)
	r.b.AssertValid(t)
}
