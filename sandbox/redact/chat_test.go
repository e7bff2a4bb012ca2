package redact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChatHoldsBackOnlyWhatCouldBeASecret: each piece of a streamed
// answer is passed on, redacted, as soon as nothing after it can change
// it: a chat is delayed by about a word.
func TestChatHoldsBackOnlyWhatCouldBeASecret(t *testing.T) {
	r := New([]string{"DB_PASSWORD=correct horse battery 42"})
	type step struct{ in, want string }
	tests := []struct {
		name  string
		steps []step
		close string
	}{
		{"words", []step{{"Hello ", "Hello "}, {"wor", ""}, {"ld, and ", "world, and "}, {"more", ""}}, "more"},
		{"token across pieces", []step{{"use ", "use "}, {ghToken[:6], ""}, {ghToken[6:], ""}, {" now", "[REDACTED:github-token] "}}, "now"},
		{"bearer in an earlier piece", []step{{"Authorization: Bearer ", "Authorization: Bearer "}, {"abcdefghijklmnop123456", ""}, {"\nok", "[REDACTED:bearer]\n"}}, "ok"},
		{"known value with spaces", []step{{"it is correct ", "it is "}, {"horse battery ", ""}, {"42 fine ", "[REDACTED:env:DB_PASSWORD] fine "}}, ""},
		{"not the value after all", []step{{"a correct ", "a "}, {"answer ", "correct answer "}}, ""},
		{"key block held to its end", []step{{"key:\n-----BEGIN RSA " + "PRIVATE KEY-----\n", "key:\n"}, {"MIIEowIBAAKCAQEA1234\n", ""},
			{"-----END RSA " + "PRIVATE KEY-----\nafter ", "[REDACTED:private-key]\n\n\nafter "}}, ""},
		{"key block without its end", []step{{"-----BEGIN EC " + "PRIVATE KEY-----\nabc ", ""}, {"def ", ""}}, "[REDACTED:private-key]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChat(r)
			var all strings.Builder
			for i, st := range tt.steps {
				got := c.Write(st.in)
				all.WriteString(got)
				if got != st.want {
					t.Errorf("piece %d (%q) passed on %q, want %q", i, st.in, got, st.want)
				}
			}
			got := c.Close()
			all.WriteString(got)
			if got != tt.close {
				t.Errorf("Close passed on %q, want %q", got, tt.close)
			}
			if c.Text() != all.String() {
				t.Errorf("Text() = %q, but %q was passed on", c.Text(), all.String())
			}
		})
	}
}

// TestChatAgreesWithRedact: a text streamed in pieces of any size comes
// out as Redact makes it whole, for the formats' examples.
func TestChatAgreesWithRedact(t *testing.T) {
	r := New([]string{"MY_API_TOKEN=tok-very-secret-1234"})
	r.AddDotEnv(".env", []byte("K="+corpusValue+"\n"))
	text := strings.Join([]string{"token is tok-very-secret-1234 ok", "use " + ghToken + " now", "id=" + awsKey, slack,
		"x " + anthropic + " y", "Cookie " + jwt, "before\n" + pemKey + "after", "DB_PASSWORD=hunter2hunter2",
		`{"auth_token": "a1b2c3d4e5f6g7"}`, "Authorization: Bearer abcdefghijklmnop123456", "postgres://user:s3cretpw@db:5432/x",
		"half " + corpusValue[:12] + "\n" + corpusValue[12:] + " done", "enc " + percentAll(corpusToken) + " end"}, "\n") + "\n"
	want := r.Redact(text)
	for _, size := range []int{1, 2, 3, 5, 8, 13, 64, len(text)} {
		c := NewChat(r)
		var got strings.Builder
		for s := text; s != ""; {
			n := min(size, len(s))
			got.WriteString(c.Write(s[:n]))
			s = s[n:]
		}
		got.WriteString(c.Close())
		if got.String() != want {
			t.Errorf("in pieces of %d:\n got %q\nwant %q", size, got.String(), want)
		}
	}
}

// BenchmarkChatStreamedAnswer streams an answer through a Chat in 20-byte
// pieces, as a model's text arrives: a Go source file (go/parser's
// parser.go, dense in the patterns' hints) and a page of prose (this
// repository's docs/sandbox.md), with a session's known values: two long
// provider keys and a .env file's.
func BenchmarkChatStreamedAnswer(b *testing.B) {
	r := New([]string{"ANTHROPIC_API_KEY=" + anthropic + strings.Repeat("Zq4", 26), "GITHUB_TOKEN=" + ghToken})
	r.AddDotEnv(".env", []byte("DB_PASSWORD=dotenv-pw-"+"K3j8Hq1Vb6\nSTRIPE_KEY="+corpusValue+"\n"))
	prose, err := os.ReadFile(filepath.Join("..", "..", "docs", "sandbox.md"))
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct{ name, text string }{{"go-source", sourceFiles(b)["parser.go"]}, {"prose", string(prose)}} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			for b.Loop() {
				c := NewChat(r)
				for s := in.text; s != ""; {
					n := min(20, len(s))
					c.Write(s[:n])
					s = s[n:]
				}
				c.Close()
			}
		})
	}
}
