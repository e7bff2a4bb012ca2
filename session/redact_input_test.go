package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/sandbox/redact"
)

// TestRedactInput: a tool call's recorded input loses its secrets, in
// values and keys, escaped or not, and stays valid JSON with its keys in
// order; an input without secrets is kept byte for byte.
func TestRedactInput(t *testing.T) {
	token := "ghp_" + strings.Repeat("Rk4", 12)
	var esc strings.Builder
	for _, c := range token {
		esc.WriteString(`\u00` + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15]))
	}
	r := redact.New(nil)
	tests := []struct {
		name, in, want string
		changed        bool
	}{
		{"no secret", `{"b": 1,  "a": ["x", true, null, 2.50]}`, `{"b": 1,  "a": ["x", true, null, 2.50]}`, false},
		{"in a value", `{"z": 1, "command": "echo ` + token + ` <&>", "a": [1.0]}`, `{"z":1,"command":"echo [REDACTED:github-token] <&>","a":[1.0]}`, true},
		{"JSON-escaped", `{"text": "` + esc.String() + `"}`, `{"text":"[REDACTED:github-token]"}`, true},
		{"in a key", `{"` + token + `": "x"}`, `{"[REDACTED:github-token]":"x"}`, true},
		{"not JSON", `"{\"command\": \"` + token + `"`, `"{\"command\": \"[REDACTED:github-token]"`, true},
		{"across strings: no secret in any", `["sk-ant-", "` + strings.Repeat("a", 30) + `"]`, `["sk-ant-", "` + strings.Repeat("a", 30) + `"]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := redactInput(r, json.RawMessage(tt.in))
			if string(got) != tt.want || changed != tt.changed {
				t.Errorf("redactInput(%s) = %s, %v; want %s, %v", tt.in, got, changed, tt.want, tt.changed)
			}
			if !json.Valid(got) {
				t.Errorf("%s is not valid JSON", got)
			}
		})
	}
}
