package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// stallToken is a token the model writes after a pause, in pieces.
var stallToken = "ghp_" + "Zy7Lq2Wx9Kd4Mv8Tr3Bn6Pf1Hs5Jc0Ga4Ue"

// TestStreamedAnswerShowsWordsAndHoldsTokensThroughTheBinary: a model
// that pauses after each piece of its answer has each word shown at once
// (the editor is not a word behind it), while what may still become a
// secret is not: the first letters of a token, of a known value, or the
// name before a value are held until the secret is known and redacted.
// What the editor was shown, joined, is what the log holds.
func TestStreamedAnswerShowsWordsAndHoldsTokensThroughTheBinary(t *testing.T) {
	value := "dotenvstall-" + "Rk5Tq9Xw2Lm7Zp"
	pieces := []string{"Your key is", " gh", "p_", stallToken[4:20], stallToken[20:], ", the value", " " + value[:9], value[9:],
		" and the password", " is hunter", "2hunter2. Done"}
	text, _ := json.Marshal(pieces)
	scenario := `{"turns": [{"calls": [{"text": ` + string(text) + `, "delay_ms": 20}]}]}`
	ws := acptest.Workspace(t, map[string]string{".env": "K=" + value + "\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario)})
	a.Initialize()
	sid := a.NewSession(ws)
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "what is the key?"))
	// The first piece ends in a word: it is shown before the next comes.
	a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), `"text":"Your key is"`) })
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
