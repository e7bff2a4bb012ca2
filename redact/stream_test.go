package redact

import (
	"strings"
	"testing"
)

// TestRedactAfter: a piece of a stream that starts inside a key block
// (the piece before ended after its begin line) is key up to the end
// line; otherwise it is redacted as Redact does.
func TestRedactAfter(t *testing.T) {
	const body = "MIIEowIBAAKCAQEAx1y2b3c4d5e6f7g8h9i0jAbCdEfGhIjKlMnOpQrStUvWxYz\nQ2w3e4r5t6y7u8i9o0pAsDfGhJkLzXcVbNm\n"
	r := New(nil)
	tests := []struct {
		name, prev, s, want string
	}{
		{"the body and end line", "log\n-----BEGIN RSA PRIVATE KEY-----\n", body + "-----END RSA PRIVATE KEY-----\nafter\n", "[REDACTED:private-key]\n\n\nafter\n"},
		{"the body without its end yet", "-----BEGIN PRIVATE KEY-----\n", body, "[REDACTED:private-key]\n\n"},
		{"the block had ended", "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n", "plain\n", "plain\n"},
		{"no block before", "log\n", "plain\n", "plain\n"},
		{"a code line naming the marker is no block", "s := \"-----BEGIN\"\n", "plain\n", "plain\n"},
	}
	for _, tt := range tests {
		got := r.RedactAfter(tt.prev, tt.s)
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if strings.Contains(got, "MIIEow") {
			t.Errorf("%s: the key's body shows: %q", tt.name, got)
		}
		if InKeyBlock(tt.prev+tt.s) != (tt.name == "the body without its end yet") {
			t.Errorf("%s: InKeyBlock(prev+s) = %v", tt.name, !InKeyBlock(tt.prev+tt.s))
		}
	}
}
