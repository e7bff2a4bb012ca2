package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// stallToken is a token the model writes after a pause, in pieces.
var stallToken = "ghp_" + "Zy7Lq2Wx9Kd4Mv8Tr3Bn6Pf1Hs5Jc0Ga4Ue"

// anthropicText is a recorded-style Anthropic stream of a text answer
// written in pieces, one content_block_delta event each.
func anthropicText(pieces []string) string {
	var b strings.Builder
	event := func(name string, data any) {
		j, _ := json.Marshal(data)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, j)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_e2e", "type": "message", "role": "assistant",
		"content": []any{}, "model": "claude-sonnet-4-5", "usage": map[string]int{"input_tokens": 25, "output_tokens": 1}}})
	event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}})
	for _, p := range pieces {
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": p}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]int{"output_tokens": 15}})
	event("message_stop", map[string]any{"type": "message_stop"})
	return b.String()
}

// TestStreamedAnswerShowsWordsAndHoldsTokensThroughTheBinary: a model
// that pauses after each piece of its answer has each word shown at once
// (the editor is not a word behind it), while what may still become a
// secret is not: the first letters of a token, of a known value, or the
// name before a value are held until the secret is known and redacted.
// What the editor was shown, joined, is what the log holds. The model's
// server sends no piece until the test lets it: the first is shown while
// nothing more has come.
func TestStreamedAnswerShowsWordsAndHoldsTokensThroughTheBinary(t *testing.T) {
	value := "dotenvstall-" + "Rk5Tq9Xw2Lm7Zp"
	pieces := []string{"Your key is", " gh", "p_", stallToken[4:20], stallToken[20:], ", the value", " " + value[:9], value[9:],
		" and the password", " is hunter", "2hunter2. Done"}
	// Events: message_start, content_block_start, then the pieces. The
	// gate lets the second and the third (the first piece) go.
	gate := make(chan struct{}, 2)
	gate <- struct{}{}
	gate <- struct{}{}
	srv := providertest.NewServer(t, providertest.Reply{Body: anthropicText(pieces), Gate: gate})
	ws := acptest.Workspace(t, map[string]string{".env": "K=" + value + "\n"})
	// The key is a known value too: a piece ending in its first letters
	// would be held back. None of the answer's does.
	a := acptest.Start(t, acptest.Options{Model: "anthropic/claude-sonnet-4-5",
		Env: isolated(t, "ANTHROPIC_API_KEY=e2e-chat-key-0000", "ANTHROPIC_BASE_URL="+srv.URL)})
	a.Initialize()
	sid := a.NewSession(ws)
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "what is the key?"))
	// The first piece ends in a word: it is shown before the next comes.
	a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), `"text":"Your key is"`) })
	close(gate) // the rest, as fast as the server writes
	if res, rerr := a.Wait(answer); rerr != nil || !strings.Contains(string(res), "end_turn") {
		t.Fatalf("prompt answered %s %v; stderr:\n%s", res, rerr, a.Stderr())
	}
	want := "Your key is [REDACTED:github-token], the value [REDACTED:.env:K] and the password is hunter2hunter2. Done"
	var shown strings.Builder
	for _, u := range a.Updates(sid) {
		if u.Kind != "agent_message_chunk" {
			continue
		}
		for _, secret := range []string{"ghp_", stallToken[4:12], value[:8], value[len(value)-8:]} {
			if strings.Contains(u.Text, secret) {
				t.Errorf("the editor was shown %q, which holds %q of a secret", u.Text, secret)
			}
		}
		shown.WriteString(u.Text)
	}
	if shown.String() != want {
		t.Errorf("the editor was shown\n%q\nwant\n%q", shown.String(), want)
	}
	answers := eventsOf(acptest.Log(t, a.DB, sid), "assistant_message")
	if len(answers) != 1 || answers[0]["text"] != want {
		t.Errorf("the log holds the answers %v, want one: what was shown", answers)
	}
}
