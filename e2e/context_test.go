package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// surveyWindow is the model's window in longSurvey: small enough that the
// session outgrows it, first dropping outputs and then compacting, with
// room for the whole tool catalogue (it grows with each built-in tool).
const surveyWindow = 16_000

// longSurvey is a scripted session that outgrows its window:
// each call thinks aloud at length and reads a file; one file is far
// larger than the window allows for a single output.
func longSurvey(t *testing.T, calls int) string {
	var notes strings.Builder
	for i := range 50 {
		fmt.Fprintf(&notes, "note %d: the survey goes on, checking names, sizes and owners of each file. ", i)
	}
	var cs []map[string]any
	for i := range calls {
		file := fmt.Sprintf("f%d.txt", i%6)
		if i == 3 {
			file = "big.txt"
		}
		cs = append(cs, map[string]any{
			"text":       []string{fmt.Sprintf("Step %d. ", i), notes.String()},
			"tool_calls": []any{map[string]any{"name": "read_file", "input": map[string]string{"path": file}}},
		})
	}
	cs = append(cs, map[string]any{"text": "Survey done."})
	sc := map[string]any{
		"sequential": true,
		"model":      map[string]any{"window": surveyWindow, "max_output": 1_000, "tokenizer": "o200k_base"},
		"turns":      []any{map[string]any{"calls": cs}, map[string]any{"calls": []any{map[string]any{"text": "Still on it."}}}},
	}
	var sums []any
	for range 2 * calls {
		sums = append(sums, map[string]any{"text": `{"goal":"survey the workspace files","done":["read f0-f2 and big.txt"],` +
			`"in_progress":["reading the remaining files"],"handles":["path f0.txt"],"decisions":["read every file whole"]}`})
	}
	sc["summaries"] = sums
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	return acptest.Scenario(t, string(b))
}

func surveyWorkspace(t *testing.T) string {
	files := map[string]string{}
	for i := range 6 {
		var b strings.Builder
		for j := range 100 {
			fmt.Fprintf(&b, "file %d entry %d: owner=team-%d size=%d status=active\n", i, j, j%7, j*131%9000)
		}
		files[fmt.Sprintf("f%d.txt", i)] = b.String()
	}
	var big strings.Builder
	for j := range 2_000 {
		fmt.Fprintf(&big, "big entry %d: a long line of log output with a request id %08x and a latency of %d ms\n", j, j*2654435761, j%300)
	}
	files["big.txt"] = big.String()
	return acptest.Workspace(t, files)
}

func TestContextWindowThroughTheBinary(t *testing.T) {
	ws := surveyWorkspace(t)
	a := acptest.Start(t, acptest.Options{Model: longSurvey(t, 18)})
	a.Initialize()
	sid := a.NewSession(ws)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
	if stop := a.Prompt(sid, "/constraint never edit f1.txt"); stop != "end_turn" {
		t.Fatalf("pin: %s", stop)
	}
	const first = "Survey every file in the workspace and report owners."
	if stop := a.Prompt(sid, first); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	if stop := a.Prompt(sid, "Anything else?"); stop != "end_turn" {
		t.Fatalf("second stopReason = %q", stop)
	}
	a.AssertValid(t)

	// The editor heard about occupancy on every call, within the window.
	usage := 0
	for _, u := range a.Updates(sid) {
		if u.Kind != "usage_update" {
			continue
		}
		usage++
		used, size := u.Fields["used"].(float64), u.Fields["size"].(float64)
		if size != surveyWindow || used <= 0 || used+1_000 > size {
			t.Fatalf("usage_update used=%v size=%v: over the window less the answer's 1,000", used, size)
		}
	}
	if usage != 20 {
		t.Errorf("%d usage updates, want one per model call (20)", usage)
	}

	events := acptest.Log(t, a.DB, sid)
	var actions []string
	compactions := 0
	for _, e := range events {
		p := e["payload"].(map[string]any)
		switch e["kind"] {
		case "context_assembled":
			actions = append(actions, p["action"].(string))
		case "compaction":
			compactions++
			r, ok := e["replaces"].(map[string]any)
			if !ok || r["through"] != p["through"] || r["events"].(float64) < 3 || r["from"].(float64) < 1 {
				t.Fatalf("compaction does not say what it replaced: %v", e)
			}
			if p["goal"] != "survey the workspace files" || len(p["handles"].([]any)) < 2 {
				t.Fatalf("compaction fields = %v", p)
			}
		case "tool_result":
			if strings.Contains(p["output"].(string), "big entry 0:") && !strings.Contains(p["output"].(string), "cut here to fit the context window") {
				t.Fatal("big.txt reached the log uncut")
			}
		}
	}
	joined := strings.Join(actions, " ")
	if !strings.Contains(joined, "drop_outputs") || compactions == 0 || !strings.Contains(joined, "compact") {
		t.Fatalf("actions %s with %d compactions: want drops and a compaction", joined, compactions)
	}

	// The same through the extension method.
	var resp struct {
		Events []struct {
			Kind     string         `json:"kind"`
			Replaces map[string]any `json:"replaces"`
		} `json:"events"`
	}
	a.MustCall("_bridle/events", map[string]any{"sessionId": sid}, &resp)
	found := 0
	for _, e := range resp.Events {
		if e.Kind != "compaction" {
			continue
		}
		// What the summary covers and what it freed are two figures: the
		// originals since the start, and the window's shrinking.
		covered, _ := e.Replaces["coveredTokens"].(float64)
		freed, _ := e.Replaces["freedTokens"].(float64)
		before, _ := e.Replaces["windowBefore"].(float64)
		after, _ := e.Replaces["windowAfter"].(float64)
		if e.Replaces["events"] != nil && covered > 0 && freed > 0 && before-after == freed && after < surveyWindow {
			found++
		} else {
			t.Errorf("a compaction's figures: %v", e.Replaces)
		}
	}
	if found != compactions {
		t.Errorf("_bridle/events says what %d of %d compactions covered and freed", found, compactions)
	}

	// Each compaction showed as a card while it ran, and ended saying
	// what it summarized and what the window freed.
	cards := 0
	for _, u := range a.Updates(sid) {
		if u.Kind == "tool_call" && u.Fields["title"] == "Compacting the history" && u.Fields["kind"] == "think" {
			cards++
		}
		if u.Kind == "tool_call_update" && u.Fields["status"] == "completed" &&
			strings.HasPrefix(fmt.Sprint(u.Fields["toolCallId"]), "compact-") && !strings.Contains(fmt.Sprint(u.Fields["content"]), "The window went from") {
			t.Errorf("a compaction card ended without the window's figures: %v", u.Fields)
		}
	}
	if cards != compactions {
		t.Errorf("%d compaction cards for %d compactions", cards, compactions)
	}

	out, err := acptest.Run(t, "log", "--db", a.DB, "--context", sid)
	if err != nil {
		t.Fatalf("bridle log --context: %v\n%s", err, out)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 21 || !strings.Contains(rows[0], "TASK+PINS") || !strings.Contains(out, "drop_outputs") || !strings.Contains(out, "compact") {
		t.Fatalf("bridle log --context printed:\n%s", out)
	}
	out, _ = acptest.Run(t, "log", "--db", a.DB, sid)
	if !regexp.MustCompile(`compaction +\d+ +summary of events 5–\d+ \(\d+ events, \d+ tokens as originals\) in \d+ tokens; the window went from \d+ to \d+ tokens \(freed \d+\): "survey the workspace files"`).MatchString(out) {
		t.Fatalf("bridle log does not show what the summary replaced:\n%s", out)
	}
}

func TestBadContextConfigurationIsRefused(t *testing.T) {
	a := acptest.Start(t, acptest.Options{Model: "scripted/demo", Env: []string{`BRIDLE_CONTEXT={"drop":0.95,"compact":0.9}`}})
	if code := a.WaitExit(); code == 0 {
		t.Fatal("bridle started with a drop threshold above the compaction one")
	}
	if s := a.Stderr(); !strings.Contains(s, "drop threshold (95 %) must be below the compaction threshold (90 %)") {
		t.Fatalf("stderr does not say what is wrong:\n%s", s)
	}
}

// TestEstimatedCountsAreCorrectedThroughTheLoop: a model whose provider
// counts 1.5× the estimate. A big output read after the session learned
// that is cut so that it fits the per-output cap as the provider counts
// it, and a new session's first request starts from the correction the
// last session measured instead of 1.
func TestEstimatedCountsAreCorrectedThroughTheLoop(t *testing.T) {
	var big strings.Builder
	for i := range 3_000 {
		fmt.Fprintf(&big, "line %d of the big log: request %08x took %d ms\n", i, i*2654435761, i%300)
	}
	scenario := `{"usage_ratio": 1.5, "model": {"window": 40000, "max_output": 2000, "tokenizer": "claude"}, "turns": [
		{"match": "read", "calls": [
			{"tool_calls": [{"name": "read_file", "input": {"path": "small.txt"}}]},
			{"tool_calls": [{"name": "read_file", "input": {"path": "big.log"}}]},
			{"text": "Read both."}
		]},
		{"match": "again", "calls": [{"text": "Again."}]}
	]}`
	ws := acptest.Workspace(t, map[string]string{"small.txt": "small\n", "big.log": big.String()})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	first := a.NewSession(ws)
	if stop := a.Prompt(first, "read the logs"); stop != "end_turn" {
		t.Fatalf("stop %s", stop)
	}
	// The per-output cap is 20 % of the input budget (window less the
	// answer's 2,000): 7,600 tokens as the provider counts them.
	const perOutput = 7_600
	var ratios []float64
	var bigTokens float64
	for _, e := range acptest.Log(t, a.DB, first) {
		p := e["payload"].(map[string]any)
		switch e["kind"] {
		case "context_assembled":
			r, _ := p["ratio"].(float64)
			ratios = append(ratios, r)
		case "tool_result":
			if out, _ := p["output"].(string); strings.Contains(out, "big log") {
				bigTokens = e["tokens"].(float64)
				if !strings.Contains(out, "cut here to fit the context window") {
					t.Fatalf("the big output was not cut: %.200s", out)
				}
			}
		}
	}
	if len(ratios) != 3 || ratios[1] < 1.3 {
		t.Fatalf("ratios %v: want the second request corrected by about 1.5", ratios)
	}
	if corrected := bigTokens * ratios[2]; corrected > perOutput {
		t.Fatalf("the big output takes %.0f raw tokens, %.0f as the provider counts: over the cap %d", bigTokens, corrected, perOutput)
	}

	second := a.NewSession(ws)
	if stop := a.Prompt(second, "again"); stop != "end_turn" {
		t.Fatalf("stop %s", stop)
	}
	var seeded []float64
	for _, e := range acptest.Log(t, a.DB, second) {
		if e["kind"] == "context_assembled" {
			r, _ := e["payload"].(map[string]any)["ratio"].(float64)
			seeded = append(seeded, r)
		}
	}
	if len(seeded) != 1 || seeded[0] != ratios[len(ratios)-1] {
		t.Fatalf("the new session's first request was corrected by %v, want the last measured %v", seeded, ratios[len(ratios)-1])
	}
	a.CloseStdin()
}
