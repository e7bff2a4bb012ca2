package redact

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// The encoding corpus: the ways a command or a model can print a secret
// without printing it as it is. Each trick is applied to a known value (a
// .env file's) and to a token format (a GitHub token); handled says
// whether redaction must catch it. The tricks not handled are kept here,
// asserted to leak, so that docs/sandbox.md's list of them stays true.
var (
	corpusValue = "dotenvwin-" + "Hx7Pq2Zr9Lk4Vm"                 // 24 bytes, from a .env file
	corpusToken = "ghp_" + "Tq3Lm8Vx2Zr7Kp4Wn9Bc6Hd1Fy5Jg0Sa2Ue8" // a GitHub token's form
)

type trick struct {
	name string
	// apply prints the secret s the trick's way, in some text.
	apply func(s string) string
	// value, token: handled for a known value, for a token format.
	value, token bool
	why          string // why a trick is not handled
}

func percentAll(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func escapeAll(s, format string) string {
	var b strings.Builder
	for _, c := range s {
		fmt.Fprintf(&b, format, c)
	}
	return b.String()
}

func reverse(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

func between(s, sep string) string {
	return strings.Join(strings.Split(s, ""), sep)
}

var tricks = []trick{
	{name: "plain", apply: func(s string) string { return "the key is " + s + " here" }, value: true, token: true},
	{name: "across lines", apply: func(s string) string { return "key:\n" + s[:len(s)/2] + "\n" + s[len(s)/2:] + "\n" }, value: true,
		why: "a token's halves are no token: only a known value's pieces are recognised"},
	{name: "first half alone", apply: func(s string) string { return "first: " + s[:len(s)/2] + "\n" }, value: true,
		why: "as above"},
	{name: "second half alone", apply: func(s string) string { return "second: " + s[len(s)/2:] + "\n" }, value: true,
		why: "as above"},
	{name: "second half glued to a word", apply: func(s string) string { return "second: q" + s[len(s)/2:] + "\n" },
		why: "a piece stands for a value only as a word of its own: the last letters of any word could begin one, and a streamed answer would be held back at every word"},
	{name: "cut by a cap", apply: func(s string) string { return "K=" + s[:len(s)*2/3] + " […line cut]\n" }, value: true,
		why: "as above"},
	{name: "percent-encoded, every byte", apply: func(s string) string { return "https://x.test/?k=" + percentAll(s) + "&v=1" }, value: true, token: true},
	{name: "URL query escaping", apply: func(s string) string { return "https://x.test/?q=" + url.QueryEscape("a b/"+s+"&") }, value: true, token: true},
	{name: "percent-encoded twice", apply: func(s string) string { return "k=" + strings.ReplaceAll(percentAll(s), "%", "%25") }, value: true, token: true},
	{name: "base64", apply: func(s string) string { return "b64: " + base64.StdEncoding.EncodeToString([]byte(s)) + "\n" }, value: true,
		why: "an encoded token has no form to recognise; only known values' encodings are looked for"},
	{name: "base64 inside basic auth", apply: func(s string) string {
		return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+s))
	}, value: true, token: true},
	{name: "base64 URL alphabet, no padding", apply: func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte("xy" + s)) }, value: true,
		why: "as base64"},
	{name: "hex", apply: func(s string) string { return "hex " + hex.EncodeToString([]byte(s)) }, value: true, why: "as base64"},
	{name: "hex, upper case", apply: func(s string) string { return "HEX " + strings.ToUpper(hex.EncodeToString([]byte(s))) }, value: true, why: "as base64"},
	{name: "JSON \\u escapes", apply: func(s string) string { return `{"k": "` + escapeAll(s, `\u%04x`) + `"}` }, value: true, token: true},
	{name: "\\x escapes", apply: func(s string) string { return `printf '` + escapeAll(s, `\x%02x`) + `'` }, value: true, token: true},
	{name: "HTML character references", apply: func(s string) string { return "<p>" + escapeAll(s, "&#%d;") + "</p>" }, value: true, token: true},
	{name: "quoted-printable soft line breaks", apply: func(s string) string { return "Content: " + s[:10] + "=\n" + s[10:] + "=\n" }, value: true, token: true},
	{name: "zero-width characters", apply: func(s string) string { return "k " + between(s, "\u200b") + " ok" }, value: true, token: true},
	{name: "upper case", apply: func(s string) string { return strings.ToUpper(s) }, value: true,
		why: "upper-casing a token loses which letters were capitals"},
	// A token lower-cased keeps its form: it is still recognised.
	{name: "lower case", apply: func(s string) string { return strings.ToLower(s) }, value: true, token: true},
	{name: "reversed", apply: func(s string) string { return "rev " + reverse(s) }, value: true,
		why: "a reversed token format is not looked for (it would take a reversed pattern for each)"},
	{name: "concatenated in code, uneven", apply: func(s string) string { return `k := "` + s[:len(s)/3] + `" + "` + s[len(s)/3:] + `"` },
		why: "a piece shorter than half the value is as likely ordinary text"},
	{name: "spaces between characters", apply: func(s string) string { return between(s, " ") },
		why: "single characters cannot be told from text"},
	{name: "ROT13", apply: rot13, why: "a cipher, not an encoding: any text could be one"},
	{name: "base32", apply: func(s string) string { return b32(s) }, why: "not among the encodings looked for"},
}

func rot13(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z':
			return 'a' + (c-'a'+13)%26
		case c >= 'A' && c <= 'Z':
			return 'A' + (c-'A'+13)%26
		}
		return c
	}, s)
}

func b32(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	var b strings.Builder
	bits, n := 0, 0
	for i := range len(s) {
		bits, n = bits<<8|int(s[i]), n+8
		for n >= 5 {
			b.WriteByte(alphabet[bits>>(n-5)&31])
			n -= 5
		}
	}
	return b.String()
}

// leaked says whether out still gives away s: s itself, in any case, or
// any 8 bytes of it in a row.
func leaked(out, s string) bool {
	low := strings.ToLower(out)
	for i := 0; i+8 <= len(s); i++ {
		if strings.Contains(low, strings.ToLower(s[i:i+8])) {
			return true
		}
	}
	return false
}

// TestEncodingCorpus: every trick that is handled is redacted, in a
// whole text and streamed through a Chat word by word; the others leak,
// as the documentation says.
func TestEncodingCorpus(t *testing.T) {
	r := New(nil)
	r.AddDotEnv(".env", []byte("K="+corpusValue+"\n"))
	if len(tricks) < 16 {
		t.Fatalf("the corpus has %d tricks, want at least 16", len(tricks))
	}
	for _, tr := range tricks {
		for _, c := range []struct {
			secret  string
			handled bool
			kind    string
		}{{corpusValue, tr.value, "value"}, {corpusToken, tr.token, "token"}} {
			in := tr.apply(c.secret)
			// What the trick printed, decoded back, is checked for the
			// secret: a leak check that knows the encodings.
			visible := func(out string) bool { return leaked(out, c.secret) || leaked(undo(out), c.secret) }
			if !visible(in) {
				t.Fatalf("%s of the %s: the trick's output %q does not show the secret to the leak check", tr.name, c.kind, in)
			}
			out := r.Redact(in)
			if got := !visible(out) && out != in; got != c.handled {
				t.Errorf("%s of the %s: handled = %v, want %v:\n in: %q\nout: %q", tr.name, c.kind, got, c.handled, in, out)
			}
			if !c.handled {
				if tr.why == "" {
					t.Errorf("%s of the %s is not handled and says not why", tr.name, c.kind)
				}
				continue
			}
			if streamed := chatWords(r, in); visible(streamed) {
				t.Errorf("%s of the %s streamed word by word leaks: %q", tr.name, c.kind, streamed)
			}
		}
	}
}

// undo decodes what the tricks encode, for the leak check.
func undo(s string) string {
	out := s
	for _, f := range []func(string) string{
		func(s string) string { d, _ := url.QueryUnescape(strings.ReplaceAll(s, "%25", "%")); return d },
		func(s string) string { d, _ := decode(s); return d },
		func(s string) string { d, _ := decode(d(s)); return d },
		func(s string) string { return strings.ReplaceAll(s, "\u200b", "") },
		func(s string) string { return strings.ReplaceAll(s, " ", "") },
		reverse,
		rot13,
	} {
		out += "\n" + f(s)
	}
	for _, w := range strings.FieldsFunc(s, func(c rune) bool { return strings.ContainsRune(" :\n<>\"'", c) }) {
		if b, err := base64.StdEncoding.DecodeString(w); err == nil {
			out += "\n" + string(b)
		}
		if b, err := base64.RawURLEncoding.DecodeString(w); err == nil {
			out += "\n" + string(b)
		}
		if b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(w); err == nil {
			out += "\n" + string(b)
		}
		if b, err := hex.DecodeString(strings.ToLower(w)); err == nil {
			out += "\n" + string(b)
		}
	}
	return out
}

func d(s string) string { v, _ := decode(s); return v }

// chatWords streams s through a Chat in pieces of 1 to 7 bytes.
func chatWords(r *Redactor, s string) string {
	c := NewChat(r)
	rng := rand.New(rand.NewPCG(1, uint64(len(s))))
	var b strings.Builder
	for s != "" {
		n := min(len(s), 1+rng.IntN(7))
		b.WriteString(c.Write(s[:n]))
		s = s[n:]
	}
	b.WriteString(c.Close())
	if b.String() != c.Text() {
		panic("Chat.Text is not what it passed on")
	}
	return b.String()
}
