package redact

import (
	"fmt"
	"strings"
	"testing"
)

// Hostile texts: what a repository can make a model write, or a command
// print, to make redaction look at the same bytes again and again, or a
// Chat hold more and more. Each is built at a given length, so that the
// work it costs can be compared at one length and twice it.
var hostile = []struct {
	name string
	text func(n int) string
}{
	// Runs of what begins an escape: each could be the start of "%41",
	// "=3D", "\u0041", "&#65;".
	{"percents", run("%")},
	{"equals", run("=")},
	{"backslashes", run(`\`)},
	{"ampersands", run("&")},
	{"escape starts", run(`&#\u\x%4=3`)},
	// Runs of each pattern's hint, and of names.
	{"key hints", run("key")},
	{"token hints", run("_token")},
	{"name chain", run("a.key-")},
	{"github hints", run("ghp_ ")},
	{"openai hints", run("sk-")},
	{"jwt hints", run("eyJ.")},
	{"url hints", run("://")},
	{"url users", run("a://b:")},
	{"bearer hints", run("Bearer ")},
	{"authorization hints", run("Authorization: ")},
	{"begin lines", run("-----BEGIN ")},
	{"end lines", run("-----END RSA PRIVATE KEY-----\n")},
	// Assignments whose values are no secret, over and over: each hint
	// inside a value starts another assignment.
	{"references", run("key=$1")},
	{"percent references", run("key=%1")},
	{"values without digits", run("key=a")},
	{"values", run("key=a1")},
	{"colon-equals", run("key:=$1")},
	// Secrets that do not end.
	{"unended token", long("ghp_", "a1")},
	{"unended jwt", long("eyJ", "a")},
	{"unended assignment", long("api_key = ", "a")},
	{"unended bearer", long("Authorization: Bearer ", "a1")},
	{"unended url user", long("postgres://", "u")},
	{"unended url password", long("postgres://u:", "p")},
	{"unended key block", long("-----BEGIN RSA "+"PRIVATE KEY-----\n", "MIIEowIBAAKCAQEA1234\n")},
	{"spaces after a name", long("password =", " ")},
	// A known value's seed at every byte (hostileRedactor's values).
	{"known value's seeds", run("a")},
	{"random value's seeds", run("a1")},
}

// run returns a text of s repeated to about n bytes.
func run(s string) func(int) string {
	return func(n int) string { return strings.Repeat(s, n/len(s)) }
}

// long returns a text of head, then body repeated to about n bytes.
func long(head, body string) func(int) string {
	return func(n int) string { return head + strings.Repeat(body, n/len(body)) }
}

// hostileRedactor knows values whose seeds hostile texts repeat: an
// ordinary value (a's and a b: compared in full from every byte of a run
// of a's, it would cost the value's length at each) and a random-looking
// one, with pieces and other forms.
func hostileRedactor() *Redactor {
	r := New([]string{"MY_API_TOKEN=tok-very-secret-1234"})
	r.AddDotEnv(".env", []byte("PLAIN="+strings.Repeat("a", 3000)+"b\nRANDOM="+strings.Repeat("a1", 200)+"Zq\n"))
	r.work = &meter{}
	return r
}

// growth returns how much more work at 2n than at n f does with r.
func growth(r *Redactor, n int, f func(r *Redactor, n int)) (int64, int64) {
	r.work = &meter{}
	f(r, n)
	one := r.work.count()
	r.work = &meter{}
	f(r, 2*n)
	return one, r.work.count()
}

// TestRedactWorkIsLinear: redacting a hostile text twice as long looks at
// about twice as many bytes (scanned, given to a regular expression,
// compared with a known value, decoded), never four times: a text as long
// as a repository likes is redacted in time linear in its length.
func TestRedactWorkIsLinear(t *testing.T) {
	r := hostileRedactor()
	for _, h := range hostile {
		one, two := growth(r, 64<<10, func(r *Redactor, n int) { r.Redact(h.text(n)) })
		if float64(two) > 2.5*float64(one) {
			t.Errorf("%s: %d bytes looked at for 64 KiB, %d for 128 KiB: the work grows faster than the text", h.name, one, two)
		}
	}
}

// TestChatWorkIsLinear: streaming a hostile answer twice as long through
// a Chat looks at about twice as many bytes, and what the Chat keeps
// (its context and what it holds) stays bounded: each piece costs at
// most about that. Before, a run of "%" was looked at again for each of
// its bytes on each piece (8,000 "%" took minutes), a token without its
// end was held and looked at whole on each piece (192 KB after "ghp_":
// tens of seconds), and every "key" of "key=$1key=$1…" made the
// assignment look over the rest. What it shows also agrees with Redact
// of the whole.
func TestChatWorkIsLinear(t *testing.T) {
	const piece = 512
	r := hostileRedactor()
	for _, h := range hostile {
		var shown, whole string
		most := 0
		one, two := growth(r, 16<<10, func(r *Redactor, n int) {
			text := h.text(n)
			var kept int
			shown, kept = chatKeeping(r, text, piece)
			most = max(most, kept)
			w := r.work
			r.work = nil
			whole = r.Redact(text)
			r.work = w
		})
		if float64(two) > 2.5*float64(one) {
			t.Errorf("%s: %d bytes looked at for 16 KiB, %d for 32 KiB: the work grows faster than the answer", h.name, one, two)
		}
		if most > maxKept+piece {
			t.Errorf("%s: the chat kept %d bytes, more than its bound %d", h.name, most, maxKept+piece)
		}
		if shown != whole {
			t.Errorf("%s: the chat showed what Redact of the whole does not:\n%s", h.name, firstDiff(shown, whole))
		}
	}
}

// maxKept bounds what a Chat keeps between pieces: its context (twice
// chatContext at most, or the end of a secret it swallowed) and what it
// holds (maxHold, or a bearer token still going on, with its header).
const maxKept = 2*chatContext + maxBearer + 256

// chatKeeping streams text through a Chat in pieces of size bytes and
// returns what it passed on and the most it kept after a piece.
func chatKeeping(r *Redactor, text string, size int) (string, int) {
	c := NewChat(r)
	var b strings.Builder
	most := 0
	for s := text; s != ""; {
		n := min(size, len(s))
		b.WriteString(c.Write(s[:n]))
		s = s[n:]
		most = max(most, len(c.ctx)+len(c.pending))
	}
	b.WriteString(c.Close())
	return b.String(), most
}

// BenchmarkMicroChatAttacks streams, in 20-byte pieces, the answers the
// attacker review found to stall a Chat: 8,000 "%", "ghp_" and 192 KB of
// token characters, and "key=$1" 16,000 times; and redacts the last
// whole (BenchmarkMicroRedactHostile has the other hostile texts).
func BenchmarkMicroChatAttacks(b *testing.B) {
	r := New(nil)
	for _, in := range []struct{ name, text string }{
		{"percents-8000", strings.Repeat("%", 8000)},
		{"token-192KB", "ghp_" + strings.Repeat("a", 192_000)},
		{"assignments-16000", strings.Repeat("key=$1", 16_000)},
	} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			for b.Loop() {
				chatPieces(r, []string{in.text}, 20)
			}
		})
	}
	b.Run("redact-assignments-16000", func(b *testing.B) {
		text := strings.Repeat("key=$1", 16_000)
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			r.Redact(text)
		}
	})
}

// firstDiff describes where got and want first differ.
func firstDiff(got, want string) string {
	i := commonPrefix(got, want, false)
	return fmt.Sprintf("at byte %d: got %.80q, want %.80q", i, got[i:], want[i:])
}

// BenchmarkMicroRedactHostile redacts each hostile text at 96 KB.
func BenchmarkMicroRedactHostile(b *testing.B) {
	r := hostileRedactor()
	r.work = nil
	for _, h := range hostile {
		text := h.text(96_000)
		b.Run(strings.ReplaceAll(h.name, " ", "-"), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				r.Redact(text)
			}
		})
	}
}
