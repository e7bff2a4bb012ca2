package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/tokens"
)

// capModel is a model bridle estimates counts for (tokenizer "claude"),
// whose provider counts 1.5× the estimate of each text it is sent
// (scripted usage_ratio): 40,000 tokens less the answer's 2,000 leave an
// input budget of 38,000, and one output may take 20 % of it, 7,600 as
// the provider counts.
const (
	capModel     = `"usage_ratio": 1.5, "model": {"window": 40000, "max_output": 2000, "tokenizer": "claude"}`
	capProvider  = 1.5
	capPerOutput = 7_600
)

// logLines is n lines of a log, each naming its number.
func logLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d of the log: request %08x took %d ms\n", i, i*2654435761, i%300)
	}
	return b.String()
}

// readTurn plays scenario's turn ("read the files") in a workspace of
// files, recording the requests bridle sends, and returns the agent
// (exited), the session and the file of requests.
func readTurn(t *testing.T, scenario string, files map[string]string) (*acptest.Agent, string, string) {
	t.Helper()
	ws := acptest.Workspace(t, files)
	record := filepath.Join(t.TempDir(), "requests.jsonl")
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + record}})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "read the files"); stop != "end_turn" {
		t.Fatalf("stop %s", stop)
	}
	a.CloseStdin()
	a.WaitExit()
	return a, sid, record
}

// recordedResults reads the requests bridle sent (BRIDLE_RECORD_REQUESTS)
// and returns, per request, its tool results' texts.
func recordedResults(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no recorded requests: %v", err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var req provider.Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				if p.Kind == provider.PartToolResult {
					texts = append(texts, p.Text)
				}
			}
		}
		out = append(out, texts)
	}
	return out
}

var (
	cutNote   = regexp.MustCompile(`cut here to fit the context window; ([^…]*)…`)
	artifactR = regexp.MustCompile(`^read_artifact ([A-Za-z0-9_.]+) to see it $`)
)

// TestEveryOutputFitsItsCapAsTheProviderCounts: with a provider that
// counts 1.5× the estimate, a session's correction (a mean over whole
// requests, their structure included) comes out a little lower, and an
// output cut to the cap by it took up to 3 % more than the cap as the
// provider counts it; and a read cut before it was recorded said "rerun
// the call", with nothing kept to read the rest exactly. Now every output
// of every request fits the cap as the provider counts it, and a cut
// read names the artifact its whole text was kept in.
func TestEveryOutputFitsItsCapAsTheProviderCounts(t *testing.T) {
	scenario := `{` + capModel + `, "turns": [{"match": "read", "calls": [
		{"tool_calls": [{"name": "read_file", "input": {"path": "small.txt"}}]},
		{"tool_calls": [{"name": "read_file", "input": {"path": "big.log"}}]},
		{"tool_calls": [{"name": "read_file", "input": {"path": "small.txt"}}]},
		{"text": "Read them."}]}]}`
	a, sid, record := readTurn(t, scenario, map[string]string{"small.txt": "small\n", "big.log": logLines(3_000)})
	cuts, most := 0, 0.0
	for i, texts := range recordedResults(t, record) {
		for _, text := range texts {
			n := capProvider * float64((tokens.Estimate{}).Count(text))
			most = max(most, n)
			if n > capPerOutput {
				t.Errorf("request %d: an output takes %.0f tokens as the provider counts, over the cap %d (%.1f %% of the input budget): %.80q",
					i+1, n, capPerOutput, 100*n/38_000, text)
			}
			m := cutNote.FindStringSubmatch(text)
			if m == nil {
				continue
			}
			cuts++
			id := artifactR.FindStringSubmatch(m[1])
			if id == nil {
				t.Errorf("request %d: a cut output says %q, not the read_artifact id that returns it whole", i+1, m[1])
				continue
			}
			// The artifact holds the read as read_file gave it: the
			// lines the cut took out too.
			head, _, _ := strings.Cut(text, "\n[… ")
			last := strings.Split(strings.TrimSpace(head), "\n")
			var line int
			fmt.Sscanf(strings.TrimSpace(last[len(last)-1]), "%d", &line)
			kept, err := os.ReadFile(filepath.Join(filepath.Dir(a.DB), "artifacts", sid, id[1]+".txt"))
			if missing := fmt.Sprintf("%6d\tline %d of the log", line+1, line); err != nil || line == 0 || !strings.Contains(string(kept), missing) || strings.Contains(text, missing) {
				t.Errorf("artifact %s does not hold the line the cut took out, %q (%v): %.200q", id[1], missing, err, kept)
			}
		}
	}
	t.Logf("the largest output took %.0f tokens as the provider counts (%.1f %% of the input budget)", most, 100*most/38_000)
	if cuts == 0 {
		t.Fatal("no request showed big.log cut: the test needs one")
	}
}

// TestAnOutputCutAgainNamesTheResult: an output recorded whole while the
// session's correction was low is cut again at assembly once it grows
// (here the provider reported almost nothing for the first two requests,
// then 1.5× the estimate). The cut names the result, read_artifact
// r<seq>, which returns what the model was shown; before, it said "rerun
// the call", which returns the file as it is now.
func TestAnOutputCutAgainNamesTheResult(t *testing.T) {
	scenario := `{` + capModel + `, "turns": [{"match": "read", "calls": [
		{"usage": {"input_tokens": 1}, "tool_calls": [{"name": "read_file", "input": {"path": "small.txt"}}]},
		{"usage": {"input_tokens": 1}, "tool_calls": [{"name": "read_file", "input": {"path": "medium.log"}}]},
		{"tool_calls": [{"name": "read_file", "input": {"path": "small.txt"}}]},
		{"tool_calls": [{"name": "read_file", "input": {"path": "small.txt"}}]},
		{"tool_calls": [{"name": "read_file", "input": {"path": "small.txt"}}]},
		{"tool_calls": [{"name": "read_file", "input": {"path": "small.txt"}}]},
		{"text": "Read them."}]}]}`
	a, sid, record := readTurn(t, scenario, map[string]string{"small.txt": "small\n", "medium.log": logLines(350)})
	var seq int64
	for _, e := range acptest.Log(t, a.DB, sid) {
		if p, _ := e["payload"].(map[string]any); e["kind"] == "tool_result" {
			if out, _ := p["output"].(string); strings.Contains(out, "line 349 of the log") {
				if strings.Contains(out, "cut here") {
					t.Fatalf("medium.log was cut when it was recorded: the test needs it whole: %.200q", out)
				}
				seq = int64(e["seq"].(float64))
			}
		}
	}
	if seq == 0 {
		t.Fatal("medium.log was not read")
	}
	whole, recut := false, false
	for i, texts := range recordedResults(t, record) {
		for _, text := range texts {
			if !strings.Contains(text, "line 0 of the log") {
				continue
			}
			m := cutNote.FindStringSubmatch(text)
			if m == nil {
				whole = true
				continue
			}
			recut = true
			if want := fmt.Sprintf("read_artifact r%d to see it ", seq); m[1] != want {
				t.Errorf("request %d: medium.log, shown whole before, is cut with %q; want %q", i+1, m[1], want)
			}
		}
	}
	if !whole || !recut {
		t.Fatalf("medium.log shown whole: %v, cut again later: %v; the test needs both", whole, recut)
	}
}
