package redact

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRedactJSON: a tool call's recorded input loses its secrets, in
// values and keys, escaped or not, and those only the keys above a value
// mark; it stays valid JSON with its keys in order, and an input without
// secrets is kept byte for byte. What the walk would leave and the whole
// text shows makes the input stored as text.
func TestRedactJSON(t *testing.T) {
	token := "ghp_" + strings.Repeat("Rk4", 12)
	var esc strings.Builder
	for _, c := range token {
		esc.WriteString(`\u00` + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15]))
	}
	// Fake secrets only their keys mark, assembled at run time.
	apiKey, pw, tok := "abc123"+"def456ghi789", "hunter2"+"hunter2x9", "k9Qz"+"7Lm2Xw5v"
	key := "-----BEGIN " + "RSA PRIVATE KEY-----"
	end := "-----END RSA " + "PRIVATE KEY-----"
	r := New(nil)
	tests := []struct {
		name, in, want string
		changed        bool
	}{
		{"no secret", `{"b": 1,  "a": ["x", true, null, 2.50]}`, `{"b": 1,  "a": ["x", true, null, 2.50]}`, false},
		{"in a value", `{"z": 1, "command": "echo ` + token + ` <&>", "a": [1.0]}`, `{"z":1,"command":"echo [REDACTED:github-token] <&>","a":[1.0]}`, true},
		{"JSON-escaped", `{"text": "` + esc.String() + `"}`, `{"text":"[REDACTED:github-token]"}`, true},
		{"in a key", `{"` + token + `": "x"}`, `{"[REDACTED:github-token]":"x"}`, true},
		{"not JSON", `"{\"command\": \"` + token + `"`, `"{\"command\": \"[REDACTED:github-token]"`, true},
		{"not JSON at all", `{"command": "` + token, `"{\"command\": \"[REDACTED:github-token]"`, true},
		{"across strings: no secret in any", `["sk-ant-", "` + strings.Repeat("a", 30) + `"]`, `["sk-ant-", "` + strings.Repeat("a", 30) + `"]`, false},

		// A value only its key marks.
		{"its key names it", `{"API_KEY": "` + apiKey + `"}`, `{"API_KEY":"[REDACTED:assignment]"}`, true},
		{"nested", `{"command": "./deploy", "env": {"API_KEY": "` + apiKey + `", "REGION": "eu-west-1a"}}`,
			`{"command":"./deploy","env":{"API_KEY":"[REDACTED:assignment]","REGION":"eu-west-1a"}}`, true},
		{"a password", `{"password": "` + pw + `"}`, `{"password":"[REDACTED:assignment]"}`, true},
		{"an array below the key", `{"tokens": ["` + tok + `", "` + apiKey + `"], "n": 2}`, `{"tokens":["[REDACTED:assignment]","[REDACTED:assignment]"],"n":2}`, true},
		{"an object below the key", `{"credentials": {"prod": {"id": "` + apiKey + `"}}}`, `{"credentials":{"prod":{"id":"[REDACTED:assignment]"}}}`, true},
		{"arrays of objects", `[{"name": "a", "secret": "` + pw + `"}, {"name": "b"}]`, `[{"name":"a","secret":"[REDACTED:assignment]"},{"name":"b"}]`, true},
		{"only the value's first word", `{"auth_token": "` + apiKey + ` and more"}`, `{"auth_token":"[REDACTED:assignment] and more"}`, true},
		{"escaped below the key", `{"API_KEY": "\u0061bc123def456ghi789"}`, `{"API_KEY":"[REDACTED:assignment]"}`, true},
		{"a reference is no secret", `{"API_KEY": "$API_KEY_FROM_ENV1", "password": "${DB_PASSWORD}"}`, `{"API_KEY": "$API_KEY_FROM_ENV1", "password": "${DB_PASSWORD}"}`, false},
		{"no digit, no secret", `{"password": "correct-horse-battery"}`, `{"password": "correct-horse-battery"}`, false},
		{"too short", `{"password": "abc1234"}`, `{"password": "abc1234"}`, false},
		{"not a secret name", `{"keyboard": "` + apiKey + `", "keyword": "` + apiKey + `x"}`, `{"keyboard": "` + apiKey + `", "keyword": "` + apiKey + `x"}`, false},
		{"numbers stay", `{"pin_password": 12345678}`, `{"pin_password": 12345678}`, false},

		// What only a string, its escapes undone, shows.
		{"a URL's slashes escaped", `{"url": "https:\/\/user:s3cret` + `pw99@db\/x"}`, `{"url":"https://user:[REDACTED:url-password]@db/x"}`, true},
		{"a key block's tail as a string's first line", `["x", "MIIEowIBAAKCAQEA1234\n` + end + `"]`, `["x","[REDACTED:private-key]\n"]`, true},

		// The backstop: a key block cut into lines, whose first and last
		// lines the walk redacts alone; the lines between show only in the
		// whole text.
		{"a key block across strings", `{"lines": ["` + key + `", "MIIEowIBAAKCAQEA1234", "abcdEFGH5678", "` + end + `"]}`,
			`"{\"lines\": [\"[REDACTED:private-key]\"]}"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := r.RedactJSON([]byte(tt.in))
			if string(got) != tt.want || changed != tt.changed {
				t.Errorf("RedactJSON(%s) = %s, %v; want %s, %v", tt.in, got, changed, tt.want, tt.changed)
			}
			if !json.Valid(got) {
				t.Errorf("%s is not valid JSON", got)
			}
			for _, s := range []string{token, apiKey, pw, tok, "MIIEow", "abcdEFGH5678"} {
				if strings.Contains(string(got), s) && !strings.Contains(tt.want, s) {
					t.Errorf("%s keeps %s", got, s)
				}
			}
		})
	}
}

// TestRedactJSONFindsWhatTheWholeTextFinds: for inputs in which a
// redaction of the whole text finds a secret, nothing of it is left
// in what RedactJSON returns.
func TestRedactJSONFindsWhatTheWholeTextFinds(t *testing.T) {
	r := New([]string{"DEPLOY_TOKEN=envvalue-" + "Qx7Lm2Zt"})
	for _, in := range []string{
		`{"API_KEY": "abc123` + `def456ghi789"}`,
		`{"env": {"DB_PASSWORD": "hunter2` + `hunter2x9"}}`,
		`{"cmd": "curl -H 'Authorization: Bearer abcdefghij` + `klmnop123456'"}`,
		`{"url": "postgres://user:s3cret` + `pw99@db:5432/x"}`,
		`{"v": "envvalue-` + `Qx7Lm2Zt"}`,
		`["-----BEGIN ` + `OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAA", "-----END OPENSSH ` + `PRIVATE KEY-----"]`,
	} {
		whole := r.Redact(in)
		if whole == in {
			t.Fatalf("the whole text of %s has no secret: the case tests nothing", in)
		}
		got, changed := r.RedactJSON([]byte(in))
		if !changed {
			t.Errorf("RedactJSON(%s) kept the input", in)
		}
		for _, sec := range []string{"def456ghi789", "hunter2x9", "klmnop123456", "s3cretpw99", "Qx7Lm2Zt", "b3BlbnNzaC1rZXktdjEAAAA"} {
			if strings.Contains(in, sec) && strings.Contains(string(got), sec) {
				t.Errorf("RedactJSON(%s) = %s: %s is left", in, got, sec)
			}
		}
	}
}

// TestRedactJSONPastTheSeeds: values past the seeds the anchor table
// holds (maxSeeds) are found without an anchor, so an input with none is
// still looked at.
func TestRedactJSONPastTheSeeds(t *testing.T) {
	r := New(nil)
	var values []string
	for i := range 1000 {
		v := fmt.Sprintf("zq%09dx%09d", i, i) // random-looking: each has a dozen forms
		values = append(values, v)
		r.AddValue(v, "many")
	}
	if len(r.table().rest) == 0 {
		t.Fatal("every value has a seed: the test tests nothing")
	}
	for _, v := range values {
		got, changed := r.RedactJSON([]byte(`{"v": "` + v + `"}`))
		if !changed || strings.Contains(string(got), v) {
			t.Fatalf("RedactJSON kept %s: %s", v, got)
		}
	}
}
