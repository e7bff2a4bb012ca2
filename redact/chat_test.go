package redact

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChatShowsAWordAtOnce: a word after which the model pauses is
// shown at once; the first letters of a token format are not, nor a
// line's first word while the line could be a line of a key.
func TestChatShowsAWordAtOnce(t *testing.T) {
	c := NewChat(New([]string{"MY_API_TOKEN=tok-very-secret-1234"}))
	for _, st := range []struct{ in, want string }{{"Hello", ""}, {",", "Hello,"}, {" my", " my"}, {" ", " "}, {"ghp_", ""}} {
		if got := c.Write(st.in); got != st.want {
			t.Errorf("Write(%q) = %q, want %q", st.in, got, st.want)
		}
	}
	if got := NewChat(nil).Write("ghp_"); got != "" {
		t.Errorf("Write(%q) on a new Chat = %q, want nothing", "ghp_", got)
	}
}

// TestChatHoldsBackOnlyWhatCouldBeASecret: each piece of a streamed
// answer is passed on, redacted, as soon as no text after it can change
// how it is redacted.
func TestChatHoldsBackOnlyWhatCouldBeASecret(t *testing.T) {
	formats := New(nil)
	value := New([]string{"MY_API_TOKEN=tok-very-secret-1234"})
	spaced := New([]string{"DB_PASSWORD=correct horse battery 42"})
	// Only a value that looks random is found by its halves.
	random := New([]string{"MY_API_TOKEN=tok-very-s3cr3t1234"})
	type step struct{ in, want string }
	tests := []struct {
		name  string
		r     *Redactor
		steps []step
		close string
	}{
		{"words", value, []step{{"Hello,", "Hello,"}, {" wor", " wor"}, {"ld, and ", "ld, and "}, {"more", "more"}}, ""},
		// A key block's end line without its begin line takes the key
		// lines before it (base64, no space) for the key's.
		{"a line's first word", value, []step{{"Hello", ""}, {" world", "Hello world"}, {"\nDone", "\n"}, {".\n", "Done.\n"}}, ""},
		{"a key's last lines", formats, []step{{"tail:\nMIIEowIBAAKCAQEA1234\n", "tail:\n"}, {"abcdEFGH5678\n", ""},
			{"-----END RSA " + "PRIVATE KEY-----\nafter.", "[REDACTED:private-key]\n\n\nafter."}}, ""},
		{"token across pieces", formats, []step{{"use ", "use "}, {ghToken[:6], ""}, {ghToken[6:], ""}, {" now", "[REDACTED:github-token] now"}}, ""},
		{"a hint's first letters", formats, []step{{"a g", "a "}, {"ood sk", "good "}, {"y, AK", "sky, "}, {"IA", ""}, {"!", "AKIA!"}}, ""},
		{"a word that only ends like a hint", formats, []step{{"so high", "so high"}, {" task", " task"}}, ""},
		{"not a token after all", formats, []step{{"use sk-ant-", "use "}, {"api ", "sk-ant-api "}}, ""},
		{"a value after its name", formats, []step{{"password: ", "password: "}, {"hunter2", ""}, {"hunter2 ok", "[REDACTED:assignment] ok"}}, ""},
		{"a name that is no secret", formats, []step{{"keyboard: ", "keyboard: "}, {"qwerty12", "qwerty12"}}, ""},
		{"bearer in an earlier piece", formats, []step{{"Authorization: Bearer ", "Authorization: Bearer "}, {"abcdefghijklmnop123456", ""}, {"\nok.", "[REDACTED:bearer]\nok."}}, ""},
		{"a password in a URL", formats, []step{{"postgres://user:", "postgres://user:"}, {"s3cret", ""}, {"pw@db/app", "[REDACTED:url-password]@db/app"}}, ""},
		{"an escape begun", formats, []step{{"enc %6", "enc "}, {"7" + ghToken[1:10], ""}, {ghToken[10:] + " end", "[REDACTED:github-token] end"}}, ""},
		{"an escape that was no secret", formats, []step{{"it is 100%", "it is 100"}, {" sure", "% sure"}}, ""},
		{"a known value's first letters", value, []step{{"it is tok-v", "it is "}, {"ery-secret-1234 fine", "[REDACTED:env:MY_API_TOKEN] fine"}}, ""},
		{"a known value's second half", random, []step{{"ends with ", "ends with "}, {"s3cr3t12", ""}, {"34 fine", "[REDACTED:env:MY_API_TOKEN] fine"}}, ""},
		{"an ordinary value's second half", value, []step{{"ends with ", "ends with "}, {"secret-12", "secret-12"}, {"34 fine", "34 fine"}}, ""},
		{"known value with spaces", spaced, []step{{"it is correct ", "it is "}, {"horse battery ", ""}, {"42 fine ", "[REDACTED:env:DB_PASSWORD] fine "}}, ""},
		{"not the value after all", spaced, []step{{"a correct ", "a "}, {"answer!", "correct answer!"}}, ""},
		{"key block held to its end", formats, []step{{"key:\n-----BEGIN RSA " + "PRIVATE KEY-----\n", "key:\n"}, {"MIIEowIBAAKCAQEA1234\n", ""},
			{"-----END RSA " + "PRIVATE KEY-----\nafter ", "[REDACTED:private-key]\n\n\nafter "}}, ""},
		{"key block without its end", formats, []step{{"-----BEGIN EC " + "PRIVATE KEY-----\nabc ", ""}, {"def ", ""}}, "[REDACTED:private-key]\n"},
		{"a begin line that is no key's", formats, []step{{"-----BEGIN CERT", ""}, {"IFICATE-----\n", "-----BEGIN CERTIFICATE-----\n"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChat(tt.r)
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

// chatRedactor knows an environment variable's value and a .env file's.
func chatRedactor() *Redactor {
	r := New([]string{"MY_API_TOKEN=tok-very-secret-1234"})
	r.AddDotEnv(".env", []byte("K="+corpusValue+"\n"))
	return r
}

// stalls are answers cut where a model may pause: the first piece, then
// the rest. Each is also streamed in pieces of every size.
var stalls = []struct{ before, after string }{
	{"Hello", " world, and more.\n"},
	{"use ghp_", ghToken[4:] + " now"},
	{"key gh", ghToken[2:] + "\n"},
	{"x sk-ant-", anthropic[7:] + " y"},
	{"x sk-", "ant-" + anthropic[7:] + " y"},
	{"id AKIA", awsKey[4:]},
	{"id AKIA", "BOUT 12"},
	{"Cookie eyJ", jwt[3:]},
	{"Cookie " + jwt[:30], jwt[30:] + "."},
	{"token is tok-very", "-secret-1234 ok"},
	{"half " + corpusValue[:12], "\n" + corpusValue[12:] + " done"},
	{"second " + corpusValue[12:18], corpusValue[18:] + " done"},
	{"glued x" + corpusValue[12:18], corpusValue[18:] + " stays"},
	{"b64 " + base64.StdEncoding.EncodeToString([]byte(corpusValue))[:5], base64.StdEncoding.EncodeToString([]byte(corpusValue))[5:] + "\n"},
	{"enc %4", percentAll(corpusToken)[2:] + " end"},
	{"enc %", percentAll(corpusToken)[1:] + " end"},
	{"enc " + percentAll(corpusToken)[:30], percentAll(corpusToken)[30:] + " end"},
	{`json "\u00`, "67hp_" + corpusToken[4:] + `"`},
	{"html &#1", "03;hp_" + corpusToken[4:] + " x"},
	{"qp " + corpusToken[:10] + "=", "\n" + corpusToken[10:] + "=\n"},
	{"zw " + corpusToken[:6] + "\u200b"[:2], "\u200b"[2:] + corpusToken[6:] + " ok"},
	{"password=", "hunter2hunter2\n"},
	{"DB_PASSWORD=hunter2", "hunter2 ok"},
	{`{"auth_token": "a1b2`, `c3d4e5f6g7"}`},
	{"Authorization: Bearer", " abcdefghijklmnop123456\n"},
	{"postgres://user:s3cr", "etpw@db:5432/x"},
	{"before\n-----BEGIN RSA PRIV", pemKey[len("-----BEGIN RSA PRIV"):] + "after"},
	{"https://hooks.slack.com/serv", "ices/T000/B000/XXXXXXXX ok"},
	{"sk_li", "ve_" + strings.Repeat("4eC39HqLyjWDarjtT1zdp7dc", 1) + " end"},
	{"caf\xc3", "\xa9 ok"},
	// A token right after a known value starts a word: the value is
	// masked before the patterns look.
	{"x tok-very-secret-1234gh", "p_" + ghToken[4:] + " y"},
}

// TestChatAgreesWithRedact: a text streamed in pieces of any size, or
// cut where the model pauses, comes out as Redact makes it whole.
func TestChatAgreesWithRedact(t *testing.T) {
	r := chatRedactor()
	text := strings.Join([]string{"token is tok-very-secret-1234 ok", "use " + ghToken + " now", "id=" + awsKey, slack,
		"x " + anthropic + " y", "Cookie " + jwt, "before\n" + pemKey + "after", "DB_PASSWORD=hunter2hunter2",
		`{"auth_token": "a1b2c3d4e5f6g7"}`, "Authorization: Bearer abcdefghijklmnop123456", "postgres://user:s3cretpw@db:5432/x",
		"half " + corpusValue[:12] + "\n" + corpusValue[12:] + " done", "enc " + percentAll(corpusToken) + " end"}, "\n") + "\n"
	for _, size := range []int{1, 2, 3, 5, 8, 13, 20, 64, len(text)} {
		if got, want := chatPieces(r, []string{text}, size), r.Redact(text); got != want {
			t.Errorf("in pieces of %d:\n got %q\nwant %q", size, got, want)
		}
	}
	for _, st := range stalls {
		text := st.before + st.after
		want := r.Redact(text)
		for size := 1; size <= len(text); size++ {
			if got := chatPieces(r, []string{text}, size); got != want {
				t.Errorf("%q in pieces of %d:\n got %q\nwant %q", text, size, got, want)
			}
		}
		for size := 1; size <= len(st.after); size++ {
			if got := chatPieces(r, []string{st.before, st.after}, size); got != want {
				t.Errorf("%q, then %q in pieces of %d:\n got %q\nwant %q", st.before, st.after, size, got, want)
			}
		}
	}
}

// chatPieces streams each text through one Chat in pieces of at most
// size bytes, each text starting a new piece, and returns what it
// passed on.
func chatPieces(r *Redactor, texts []string, size int) string {
	c := NewChat(r)
	var b strings.Builder
	for _, s := range texts {
		for s != "" {
			n := min(size, len(s))
			b.WriteString(c.Write(s[:n]))
			s = s[n:]
		}
	}
	b.WriteString(c.Close())
	return b.String()
}

// TestChatShowsNoSecretBeforeItIsOne: while a secret-bearing answer
// streams, whatever was shown so far holds no longer piece of the secret
// than the answer redacted whole does (the marker's letters can match a
// few of its bytes): nothing of a secret is shown before it is known to
// be one.
func TestChatShowsNoSecretBeforeItIsOne(t *testing.T) {
	r := chatRedactor()
	for _, st := range stalls {
		text := st.before + st.after
		want := r.Redact(text)
		if want == text {
			continue // no secret
		}
		secret := redactedSpan(text, want)
		bound := longestShared(want, secret)
		c := NewChat(r)
		var shown strings.Builder
		for i := range len(text) {
			shown.WriteString(c.Write(text[i : i+1]))
			if n := longestShared(shown.String(), secret); n > bound {
				t.Errorf("%q: after %q, %q was shown: %d bytes of the secret %q in a row (%d when redacted whole)",
					text, text[:i+1], shown.String(), n, secret, bound)
				break
			}
		}
		// And all of a prefix written at once.
		for i := range len(text) {
			if got := NewChat(r).Write(text[:i+1]); longestShared(got, secret) > bound {
				t.Errorf("%q: Write(%q) showed %q", text, text[:i+1], got)
			}
		}
	}
}

// redactedSpan returns the part of text that redacted became a marker:
// what lies between their common start and common end.
func redactedSpan(text, redacted string) string {
	i := commonPrefix(text, redacted, false)
	j := commonSuffix(text[i:], redacted[i:], false)
	return text[i : len(text)-j]
}

// longestShared returns the length of the longest run of bytes of
// secret found in s, ignoring case.
func longestShared(s, secret string) int {
	s, secret = strings.ToLower(s), strings.ToLower(secret)
	best := 0
	for i := range len(secret) {
		for j := len(secret); j > i+best; j-- {
			if strings.Contains(s, secret[i:j]) {
				best = j - i
				break
			}
		}
	}
	return best
}

// BenchmarkChatStreamedAnswer streams an answer through a Chat in 20-byte
// pieces, as a model's text arrives: a Go source file (go/parser's
// parser.go, dense in the patterns' hints) and a page of prose (this
// repository's docs/sandbox.md), with a session's known values: two long
// provider keys and a .env file's.
func BenchmarkChatStreamedAnswer(b *testing.B) {
	r := New([]string{"ANTHROPIC_API_KEY=" + anthropic + strings.Repeat("Zq4", 26), "GITHUB_TOKEN=" + ghToken})
	r.AddDotEnv(".env", []byte("DB_PASSWORD=dotenv-pw-"+"K3j8Hq1Vb6\nSTRIPE_KEY="+corpusValue+"\n"))
	prose, err := os.ReadFile(filepath.Join("..", "docs", "sandbox.md"))
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

// BenchmarkMicroChatLongCandidates streams, in 20-byte pieces, what a
// model told to could write to make a Chat look far back on every piece:
// a name of 3,000 hints, values and tokens of 8 KB still coming, a key
// block without its end. A piece costs in proportion to how far back the
// secret still coming began (at most the 8 KiB held and the 1 KiB of
// context): each start is looked at once a piece, not once a hint.
func BenchmarkMicroChatLongCandidates(b *testing.B) {
	r := New([]string{"MY_API_TOKEN=tok-very-secret-1234"})
	long := strings.Repeat("a1", 4000)
	for _, in := range []struct{ name, text string }{
		{"hints", strings.Repeat("key", 3000) + " ok"},
		{"assignment", "api_key = " + long + " ok"},
		{"bearer", "Authorization: Bearer " + long + " ok"},
		{"token", "ghp_" + long + " ok"},
		{"jwt-begun", "eyJ" + long + " ok"},
		{"key-block", "-----BEGIN RSA " + "PRIVATE KEY-----\n" + strings.Repeat("MIIEowIBAAKCAQEA1234\n", 400)},
		{"escapes", strings.Repeat("%41", 3000) + " ok"},
	} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			for b.Loop() {
				chatPieces(r, []string{in.text}, 20)
			}
		})
	}
}
