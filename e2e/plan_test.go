package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// planCall is a scripted call of the plan tool with steps given as
// content=status pairs.
func planCall(steps ...string) string {
	var entries []map[string]string
	for _, s := range steps {
		content, status, _ := strings.Cut(s, "=")
		entries = append(entries, map[string]string{"content": content, "status": status})
	}
	b, _ := json.Marshal(map[string]any{"entries": entries})
	return `{"tool_calls": [{"name": "plan", "input": ` + string(b) + `}]}`
}

// TestPlanIsShownKeptAndReplayed: the model sets a plan and updates it;
// the editor gets each as an ACP plan, every later request (the next
// prompt's, a subagent's) ends with the current plan, session/load
// replays it, and bridle log shows it.
func TestPlanIsShownKeptAndReplayed(t *testing.T) {
	scenario := `{"turns": [
		{"match": "fix", "calls": [
			` + planCall("Read the code=in_progress", "Fix the bug=pending") + `,
			` + planCall("Read the code=completed", "Fix the bug=in_progress") + `,
			{"text": "Planned."}
		]},
		{"match": "check", "calls": [
			` + taskCall(`{"description": "check the notes", "prompt": "SUBTASK-P: read notes.txt"}`) + `,
			{"text": "Checked."}
		]},
		{"match": "SUBTASK-P", "calls": [
			{"text": "Read."}
		]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "hello\n"})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "fix the bug"); stop != "end_turn" {
		t.Fatalf("first prompt: %s", stop)
	}
	want := [][]string{
		{"Read the code=in_progress", "Fix the bug=pending"},
		{"Read the code=completed", "Fix the bug=in_progress"},
	}
	if got := plans(a.Updates(sid)); !equalPlans(got, want) {
		t.Fatalf("plan updates %v, want %v", got, want)
	}
	if stop := a.Prompt(sid, "check the notes"); stop != "end_turn" {
		t.Fatalf("second prompt: %s", stop)
	}

	// Every request after the second plan ends with it: the next prompt's
	// and the subagent's, which reads the plan but has no plan tool.
	tail := "[x] Read the code\n[>] Fix the bug)"
	var withPlan, child int
	for i, r := range modelRequests(t, requests) {
		last := r.Messages[len(r.Messages)-1]
		text := last.Parts[len(last.Parts)-1].Text
		if i >= 2 && !strings.HasSuffix(text, tail) {
			t.Errorf("request %d ends %q, want the current plan", i+1, text)
		}
		if strings.HasSuffix(text, tail) {
			withPlan++
		}
		if strings.Contains(r.first(), "SUBTASK-P") {
			child++
			for _, tool := range r.Tools {
				if tool.Name == "plan" {
					t.Errorf("the subagent was offered the plan tool")
				}
			}
		}
	}
	if withPlan < 4 || child != 1 {
		t.Errorf("%d requests carried the plan, %d were the subagent's; want at least 4 and 1", withPlan, child)
	}

	before := len(plans(a.Updates(sid)))
	a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	if got := plans(a.Updates(sid))[before:]; !equalPlans(got, want) {
		t.Errorf("session/load replayed plans %v, want %v", got, want)
	}
	a.CloseStdin()
	out, err := acptest.Run(t, "log", "--db", a.DB, sid)
	if err != nil || !strings.Contains(out, "plan_updated") || !strings.Contains(out, "completed: Read the code") {
		t.Errorf("bridle log does not show the plan (%v):\n%s", err, out)
	}
	a.AssertValid(t)
}

// plans returns the plan updates received, each as content=status steps.
func plans(us []acptest.Update) [][]string {
	var out [][]string
	for _, u := range us {
		if u.Kind != "plan" {
			continue
		}
		var steps []string
		entries, _ := u.Fields["entries"].([]any)
		for _, e := range entries {
			m, _ := e.(map[string]any)
			steps = append(steps, m["content"].(string)+"="+m["status"].(string))
		}
		out = append(out, steps)
	}
	return out
}

func equalPlans(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], ",") != strings.Join(b[i], ",") {
			return false
		}
	}
	return true
}

// modelRequest is one request as BRIDLE_RECORD_REQUESTS writes it.
type modelRequest struct {
	Messages []struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func (r modelRequest) first() string {
	if len(r.Messages) == 0 || len(r.Messages[0].Parts) == 0 {
		return ""
	}
	return r.Messages[0].Parts[0].Text
}

func modelRequests(t *testing.T, path string) []modelRequest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no requests modelRequest: %v", err)
	}
	defer f.Close()
	var out []modelRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r modelRequest
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("a modelRequest request is not JSON: %v", err)
		}
		out = append(out, r)
	}
	return out
}
