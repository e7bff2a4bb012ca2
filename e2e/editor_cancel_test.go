package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acpclient"
	"github.com/bridle-dev/bridle/internal/acptest"
)

// silentFrom makes ed answer the first n-1 fs calls, then leave every
// later one unanswered until release is closed, sending each to held: an
// editor that stops answering in the middle of an edit (its plan, its
// preview and its write each ask it).
func silentFrom(t *testing.T, a *acptest.Agent, ed *editor, n int, held chan<- acptest.Msg, release <-chan struct{}) {
	answer := ed.handle(t)
	var mu sync.Mutex
	asked := 0
	a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		if !strings.HasPrefix(m.Method, "fs/") {
			return acpclient.FirstOption(m)
		}
		mu.Lock()
		asked++
		silent := asked >= n
		mu.Unlock()
		if silent {
			held <- m
			<-release
			return nil, &acptest.RPCError{Code: -32800, Message: "cancelled"}
		}
		return answer(m)
	}
}

// withdrew says whether bridle sent $/cancel_request for the request with
// id among the notifications received so far.
func withdrew(a *acptest.Agent, id json.RawMessage) bool {
	for _, n := range a.Notes() {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if n.Method == "$/cancel_request" && json.Unmarshal(n.Params, &p) == nil && string(p.RequestID) == string(id) {
			return true
		}
	}
	return false
}

// TestCancelDoesNotWaitForASilentEditor: the editor stops answering fs
// calls during an edit, from its first question or its second; then
// session/cancel must end the turn at once. The prompt is answered
// "cancelled" after bridle gave the question up and told the editor so
// ($/cancel_request), while the editor still holds it unanswered, and
// bridle asks it nothing more. Before, the plans and previews asked the
// editor without the turn's context: each question waited out its 10 s
// bound, then the plan asked again.
func TestCancelDoesNotWaitForASilentEditor(t *testing.T) {
	const edit, write = `{"path": "app.go", "old_string": "1", "new_string": "2"}`, `{"path": "app.go", "content": "const N = 2\n"}`
	tests := []struct {
		tool, input string
		silentFrom  int // the first fs question left unanswered
	}{
		{"edit_file", edit, 1},
		{"edit_file", edit, 2},
		{"write_file", write, 1},
		{"write_file", write, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s silent from question %d", tt.tool, tt.silentFrom), func(t *testing.T) {
			scenario := `{"turns": [{"calls": [
				{"tool_calls": [{"name": "` + tt.tool + `", "input": ` + tt.input + `}]},
				{"text": "Done."}
			]}]}`
			ws := acptest.Workspace(t, map[string]string{"app.go": "const N = 1\n"})
			path := filepath.Join(ws, "app.go")
			ed := newEditor(map[string]string{path: "const N = 1 // unsaved\n"})
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
			a.InitializeWith(true, true)
			sid := a.NewSession(ws)
			a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
			held, release := make(chan acptest.Msg, 16), make(chan struct{})
			defer close(release)
			silentFrom(t, a, ed, tt.silentFrom, held, release)

			_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "change it"))
			first := <-held // the edit is under way, and the editor is silent
			a.Notify("session/cancel", map[string]string{"sessionId": sid})
			// A guard against a hang, not a measure: the answer is due at
			// once (bridle's own bound on a question is 10 s).
			guard := time.NewTimer(30 * time.Second)
			defer guard.Stop()
			var m acptest.Msg
			select {
			case m = <-answer:
			case again := <-held:
				t.Fatalf("after the cancel bridle asked the editor again (%s %s), its question %s still unanswered", again.Method, again.Params, first.Params)
			case <-guard.C:
				t.Fatalf("no answer to the cancelled prompt; stderr:\n%s", a.Stderr())
			}
			var res struct {
				StopReason string `json:"stopReason"`
			}
			if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.StopReason != "cancelled" {
				t.Fatalf("the cancelled prompt answered %s %+v, want stopReason cancelled", m.Result, m.Error)
			}
			// Notes and answers are recorded in the order they came: the
			// question was withdrawn before the prompt was answered.
			if !withdrew(a, *first.ID) {
				t.Errorf("the prompt was answered, but bridle never withdrew its question %s (id %s) with $/cancel_request: it waited it out", first.Method, *first.ID)
			}
			select {
			case again := <-held:
				t.Errorf("bridle asked the editor %s %s after the cancel", again.Method, again.Params)
			default:
			}
			if got := ed.buffer(path); got != "const N = 1 // unsaved\n" {
				t.Errorf("the editor's buffer holds %q after the cancelled edit", got)
			}
			a.CloseStdin()
			a.AssertValid(t)
		})
	}
}
