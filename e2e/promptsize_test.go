package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// sizeScenario answers two ordinary prompts; the scripted model's window
// is 200,000 tokens, counted by the estimate.
const sizeScenario = `{"turns": [
  {"match": "first question", "calls": [{"text": "First answer."}]},
  {"match": "second question", "calls": [{"text": "Second answer."}]},
  {"match": "third question", "calls": [{"text": "Third answer."}]}
]}`

// bigPrompt returns about n bytes of varied log-like text: some 290k
// tokens for 800 KB, far past a 200k window.
func bigPrompt(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%06d ts=%d lvl=warn id=%x msg=\"retry #%d of job-%d\"\n", i, 1700000000+i*37, i*7919, i%9, i%311)
	}
	return b.String()
}

// checkRefusal checks that an oversized prompt was refused as invalid
// params, saying how large it is, what the window allows and what to do.
func checkRefusal(t *testing.T, err *acptest.RPCError, says ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the oversized prompt was not refused")
	}
	if err.Code != -32602 {
		t.Errorf("refusal code = %d, want -32602 (invalid params): %s", err.Code, err.Message)
	}
	for _, s := range append([]string{`"prompt"`, "tokens", "200,000-token window", "174,", "read_file", "resource_link", "Nothing was recorded"}, says...) {
		if !strings.Contains(err.Message, s) {
			t.Errorf("the refusal does not say %q: %s", s, err.Message)
		}
	}
}

func TestOversizedPromptIsRefusedAndTheSessionStaysUsable(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	model := acptest.Scenario(t, sizeScenario)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)

	big := bigPrompt(800 << 10)
	_, err := a.Call("session/prompt", acptest.PromptParams(sid, big))
	checkRefusal(t, err, "estimated, 800 KB")
	t.Logf("refusal: %s", err)
	if got := a.Prompt(sid, "first question"); got != "end_turn" {
		t.Fatalf("the prompt after the refusal: stopReason %q", got)
	}
	// Refused again later in the session, where it would not be the
	// first request.
	_, err = a.Call("session/prompt", acptest.PromptParams(sid, "third question\n"+big))
	checkRefusal(t, err)
	if !strings.Contains(acptest.Transcript(a.Updates(sid))[len(acptest.Transcript(a.Updates(sid)))-1], "First answer.") {
		t.Errorf("the refused prompt sent updates: %v", acptest.Transcript(a.Updates(sid)))
	}

	// A restart on the same database, session/load and a normal prompt.
	a.Kill()
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	if got := b.Prompt(sid, "second question"); got != "end_turn" {
		t.Fatalf("the prompt after a restart: stopReason %q", got)
	}
	tr := strings.Join(acptest.Transcript(b.Updates(sid)), "\n")
	if !strings.Contains(tr, "Second answer.") {
		t.Errorf("the prompt after the restart was not answered: %s", tr)
	}

	prompts := 0
	for _, e := range events(t, b, sid) {
		if e.Kind == "user_message" {
			prompts++
			if len(e.Payload) > 1000 || strings.Contains(string(e.Payload), "lvl=warn") {
				t.Errorf("the log holds the refused prompt: user_message of %d bytes", len(e.Payload))
			}
		}
		if e.Kind == "provider_error" {
			t.Errorf("the log holds an error: %s", e.Payload)
		}
	}
	if prompts != 2 {
		t.Errorf("the log holds %d prompts, want the 2 that were answered", prompts)
	}
	b.AssertValid(t)
}

func TestHugePromptIsRefusedFromItsSize(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	model := acptest.Scenario(t, sizeScenario)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	if got := a.Prompt(sid, "first question"); got != "end_turn" {
		t.Fatalf("first prompt: stopReason %q", got)
	}

	// 3 MB: more than any share of a 200k window, refused by the session
	// from its size alone.
	_, err := a.Call("session/prompt", acptest.PromptParams(sid, strings.Repeat("0123456789 abcdef, ", (3<<20)/19)))
	checkRefusal(t, err, "estimated from its size, 3.0 MB")

	// 60 MB: under the 64 MiB message limit, over the 16 MiB bridle reads
	// of a prompt: refused while it is read, neither held nor decoded.
	huge := strings.Repeat("0123456789 abcdef, ", (60<<20)/19)
	before := procStatus(t, a.Cmd.Process.Pid, "VmRSS")
	start := time.Now()
	_, err = a.Call("session/prompt", acptest.PromptParams(sid, huge))
	took := time.Since(start)
	t.Logf("a 60 MB prompt answered in %v; bridle's RSS %d MiB before, peak %d MiB", took.Round(time.Millisecond), before>>20, peakRSS(t, a.Cmd.Process.Pid)>>20)
	if err == nil || err.Code != -32602 {
		t.Fatalf("a 60 MB prompt: %v, want -32602", err)
	}
	for _, want := range []string{`"prompt" is too large`, "62.9 MB", "16 MiB", "read_file", "resource_link", "not read or recorded"} {
		if !strings.Contains(err.Message, want) {
			t.Errorf("the refusal does not say %q: %s", want, err.Message)
		}
	}

	if got := a.Prompt(sid, "second question"); got != "end_turn" {
		t.Fatalf("the prompt after the refusal: stopReason %q", got)
	}
	for _, e := range events(t, a, sid) {
		if len(e.Payload) > 100_000 {
			t.Errorf("the log holds a %s of %d bytes", e.Kind, len(e.Payload))
		}
	}
}

// TestHugePromptRefusedInBothFramings: a prompt over 16 MiB is refused
// with its id while it is read, in either framing, and the next request
// is served.
func TestHugePromptRefusedInBothFramings(t *testing.T) {
	for name, f := range map[string]acptest.Framing{"ndjson": acptest.NDJSON, "content-length": acptest.ContentLength} {
		t.Run(name, func(t *testing.T) {
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, sizeScenario), Framing: f})
			a.Initialize()
			sid := a.NewSession(acptest.Workspace(t, nil))
			_, err := a.Call("session/prompt", acptest.PromptParams(sid, strings.Repeat("x", 20<<20)))
			if err == nil || err.Code != -32602 || !strings.Contains(err.Message, "16 MiB") {
				t.Fatalf("a 20 MB prompt: %v", err)
			}
			if got := a.Prompt(sid, "first question"); got != "end_turn" {
				t.Fatalf("the prompt after the refusal: stopReason %q", got)
			}
		})
	}
}
