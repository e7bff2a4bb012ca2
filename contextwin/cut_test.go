package contextwin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
)

// An output without an artifact, cut before it is recorded, is kept whole
// by the session (keep) and its cut names the artifact; one the session
// could not keep says to rerun the call. An output that fits is not kept.
func TestACutOutputNamesWhereItIsKeptWhole(t *testing.T) {
	w, err := New(config.Context{}, func(string) config.ModelSpec { return small })
	if err != nil {
		t.Fatal(err)
	}
	big := event.ToolResult{Name: "read_file", Output: lines(2_000, "row"), Status: "completed"}
	for _, tc := range []struct {
		name, kept, want string
	}{
		{"kept", "a12.0", "read_artifact a12.0 to see it"},
		{"not kept", "", "rerun the call with a narrower range to see it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var whole string
			r, _ := w.CutOutput("m", big, 1, func(s string) string { whole = s; return tc.kept })
			if whole != big.Output {
				t.Fatalf("keep was given %d bytes, want the whole output's %d", len(whole), len(big.Output))
			}
			if !strings.Contains(r.Output, tc.want) || r.Artifact != tc.kept {
				t.Fatalf("the cut says %.300q with artifact %q; want %q", r.Output[strings.Index(r.Output, "[…"):], r.Artifact, tc.want)
			}
		})
	}
	calls := 0
	if _, _ = w.CutOutput("m", event.ToolResult{Name: "read_file", Output: "short\n"}, 1, func(string) string { calls++; return "x" }); calls != 0 {
		t.Error("an output that fits was kept")
	}
	withArtifact := big
	withArtifact.Artifact = "a3.0"
	if r, _ := w.CutOutput("m", withArtifact, 1, func(string) string { calls++; return "x" }); calls != 0 || !strings.Contains(r.Output, "read_artifact a3.0") {
		t.Errorf("an output with its own artifact was kept again (%d) or names another: %.100q", calls, r.Output)
	}
}

// An output recorded whole and cut again at assembly, once the count
// correction grew, names the result (read_artifact r<seq>): the log
// holds it as the model was shown it. Before, it said "rerun the call".
func TestAnOutputCutAgainNamesItsResult(t *testing.T) {
	est := config.ModelSpec{Window: 20_000, MaxOutput: 2_000, Tokenizer: "claude"}
	l := newLog(t, config.Context{}, est)
	lim := l.w.Limits(l.spec)
	l.prompt("read the file")
	l.assemble()
	// Recorded at ratio 1: just under the cap then.
	n := 10
	for l.w.Counter(l.spec).Count(lines(n, "f")) < int(0.9*float64(lim.PerOutput)/estimateSlack) {
		n += 10
	}
	e := l.tool("read_file", `{"path":"f.txt"}`, lines(n, "f"), "")
	if strings.Contains(l.events[len(l.events)-1].Payload.(event.ToolResult).Output, "cut here") {
		t.Fatalf("the output (%d tokens) was cut when recorded: the test needs it whole", e.Tokens)
	}
	a := l.assemble()
	if strings.Contains(requestText(a.Request), "cut here") {
		t.Fatal("the output was cut at ratio 1")
	}
	l.add(event.AssistantMessage{Text: "ok", Usage: event.Usage{InputTokens: a.Occupancy.Raw * 3 / 2}})
	l.prompt("go on")
	b := l.assemble()
	req := requestText(b.Request)
	want := fmt.Sprintf("read_artifact %s to see it", ResultID(e.Seq))
	if !strings.Contains(req, "cut here to fit the context window") || !strings.Contains(req, want) {
		i := max(0, strings.Index(req, "[…"))
		t.Fatalf("at ratio %.2f the output is shown as %.200q; want it cut, naming %q", b.Occupancy.Ratio, req[i:], want)
	}
}
