package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/tools"
)

// A dropped output that has no artifact is addressed by its seq, and
// read_artifact returns it exactly as the model saw it, from the log.
func TestDroppedOutputsHaveAnAddress(t *testing.T) {
	sc := &scripted.Scenario{Sequential: true, Turns: []scripted.Turn{longTurn(10)}}
	for range 40 {
		sc.Summaries = append(sc.Summaries, scripted.Call{Text: scripted.Chunks{`{"goal":"read the rows"}`}})
	}
	m, _ := newTestManager(t, sc)
	info, err := m.New(context.Background(), NewParams{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Get(context.Background(), info.ID)
	if stop, err := prompt(t, s, "Read all the rows."); err != nil || stop != StopEndTurn {
		t.Fatalf("stop %s, err %v", stop, err)
	}
	var dropped []int64
	outputs := map[int64]string{}
	for _, e := range s.Events() {
		switch v := e.Payload.(type) {
		case event.ContextAssembled:
			dropped = append(dropped, v.Dropped...)
		case event.ToolResult:
			outputs[e.Seq] = v.Output
		}
	}
	if len(dropped) == 0 {
		t.Fatal("no output was dropped: the test needs a window that drops")
	}
	seq := dropped[0]
	// The results of the dump tool have artifacts; address one as if it
	// had none, as a read_file result has.
	r := event.ToolResult{Name: "read_file", Output: outputs[seq]}
	if addr := contextwin.Address(r, seq, event.ToolCall{Name: "read_file"}, 100); !strings.Contains(addr, fmt.Sprintf("read_artifact r%d", seq)) {
		t.Fatalf("address %q does not name r%d", addr, seq)
	}
	res := tools.ReadArtifact{}.Run(context.Background(), s.env("k"), json.RawMessage(fmt.Sprintf(`{"id":"r%d"}`, seq)))
	var got []string
	for _, line := range strings.Split(strings.TrimRight(res.Output, "\n"), "\n") {
		if _, text, ok := strings.Cut(line, "\t"); ok {
			got = append(got, text)
		}
	}
	if res.IsError || strings.Join(got, "\n") != strings.TrimRight(outputs[seq], "\n") {
		t.Fatalf("read_artifact r%d returned %q (error %v), want the output as logged", seq, res.Output, res.IsError)
	}
	if res := (tools.ReadArtifact{}).Run(context.Background(), s.env("k"), json.RawMessage(`{"id":"r1"}`)); !res.IsError || !strings.Contains(res.Output, "names no tool result") {
		t.Fatalf("read_artifact of a seq that is no result: %q", res.Output)
	}
}
