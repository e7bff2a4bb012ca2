//go:build unix

package e2e

import (
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestBackgroundKeyBlockReadInPieces: a command in the background prints
// a private key's begin line, then (once given input) its body, then its
// end line: the read that gets the body, which starts inside the block,
// shows it as key, and nothing the model or the editor is given holds a
// line of it.
func TestBackgroundKeyBlockReadInPieces(t *testing.T) {
	body := []string{
		"MIIEowIBAAKCAQEAx1y2b3c4d5e6f7g8h9i0jAbCdEfGhIjKlMnOpQrStUvWxYz",
		"Q2w3e4r5t6y7u8i9o0pAsDfGhJkLzXcVbNmQwErTyUiOpAsDfGhJkLzXcVbNm12",
	}
	scenario := bgScenario(`cat begin.txt; read x; cat body.txt; read y; cat end.txt`,
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
		rawToolCall("command_input", `{"id": "bg1", "text": "go\n"}`),
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
		rawToolCall("command_input", `{"id": "bg1", "text": "go\n"}`),
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
	)
	a, sid, _ := serve(t, acptest.Options{Model: acptest.Scenario(t, scenario)}, map[string]string{
		"begin.txt": "key:\n-----BEGIN RSA PRIVATE KEY-----\n",
		"body.txt":  strings.Join(body, "\n") + "\n",
		"end.txt":   "-----END RSA PRIVATE KEY-----\nafter\n",
	})
	res := toolResults(t, a.DB, sid)
	if len(res) != 6 {
		t.Fatalf("%d results, want 6: %v", len(res), res)
	}
	out := func(i int) string { s, _ := res[i]["output"].(string); return s }
	if !strings.Contains(out(1), "key:\n[REDACTED:private-key]") {
		t.Errorf("the read of the begin line: %q", out(1))
	}
	if !strings.HasPrefix(out(3), "[REDACTED:private-key]\n") {
		t.Errorf("the read of the body: %q, want it redacted as key", out(3))
	}
	if !strings.Contains(out(5), "after\n") {
		t.Errorf("the read of the end: %q", out(5))
	}
	leaks := 0
	for i := range res {
		for _, line := range body {
			if strings.Contains(out(i), line[:16]) {
				leaks++
				t.Errorf("result %d holds a line of the key: %q", i, out(i))
			}
		}
	}
	for _, m := range a.Notes() {
		for _, line := range body {
			if strings.Contains(string(m.Params), line[:16]) {
				leaks++
				t.Errorf("a notification holds a line of the key: %s", m.Params)
			}
		}
	}
	t.Logf("%d results, %d notifications; %d hold a line of the key", len(res), len(a.Notes()), leaks)
}

// TestBackgroundLineShownAgainWhole: a read shows the start of a line a
// command in the background has not ended ("id: " and a value bridle does
// not know yet); the value then becomes a .env value, and the read that
// gets the line's end redacts it whole, otherwise than the part shown: it
// shows the line again, saying so, rather than what looks like a second
// line.
func TestBackgroundLineShownAgainWhole(t *testing.T) {
	value := "Zq9xLm" + "P4vR7tK2wB"
	scenario := bgScenario(`printf 'id: %s' "$(cat a.txt)"; read x; cat b.txt`,
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
		rawToolCall("run_command", `{"command": "cp env.txt .env"}`),
		rawToolCall("command_input", `{"id": "bg1", "text": "go\n"}`),
		rawToolCall("command_output", `{"id": "bg1", "wait_seconds": 30}`),
	)
	a, sid, _ := serve(t, acptest.Options{Model: acptest.Scenario(t, scenario)}, map[string]string{
		"a.txt":   value[:6],
		"b.txt":   value[6:] + " done\n",
		"env.txt": "ID_TOKEN=" + value + "\n",
	})
	res := toolResults(t, a.DB, sid)
	if len(res) != 5 {
		t.Fatalf("%d results, want 5: %v", len(res), res)
	}
	out := func(i int) string { s, _ := res[i]["output"].(string); return s }
	if !strings.HasPrefix(out(1), "id: "+value[:6]+"\n") {
		t.Errorf("the read of the line's start: %q", out(1))
	}
	if want := "[the line shown in part above, whole:]\nid: [REDACTED:.env:ID_TOKEN] done\n"; !strings.HasPrefix(out(4), want) {
		t.Errorf("the read of the line's end: %q, want it to start %q", out(4), want)
	}
	if strings.Contains(out(4), value) {
		t.Errorf("the value shows: %q", out(4))
	}
}
