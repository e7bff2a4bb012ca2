package redact

import (
	"encoding/base64"
	"encoding/hex"
	"flag"
	"math/rand/v2"
	"strings"
	"testing"
)

// splitCases is how many texts TestChatEqualsRedactOnAnySplit streams;
// raise it to look longer (-args -redact.splits=100000).
var splitCases = flag.Int("redact.splits", 600, "texts TestChatEqualsRedactOnAnySplit streams")

// splitLong is a random known value longer than a Chat holds.
var splitLong = func() string {
	rng := rand.New(rand.NewPCG(3, 3))
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 10_000)
	for i := range b {
		b[i] = chars[rng.IntN(len(chars))]
	}
	return string(b)
}()

// splitRedactor knows an environment variable's value and a .env file's:
// a random value (found in every form), one longer than a Chat holds,
// one past the length whose other forms count, ordinary ones (found as
// written only) and one with spaces.
func splitRedactor() *Redactor {
	r := New([]string{"MY_API_TOKEN=tok-very-secret-1234"})
	r.AddDotEnv(".env", []byte("K="+corpusValue+"\nLONG="+splitLong+"\nMID="+splitLong[:600]+
		"\nURL=http://localhost:8080\nUSER=postgres\nSP=correct horse battery 42\n"))
	return r
}

func rep(s string, n int) string { return strings.Repeat(s, n) }

// splitAtoms build the texts: secrets of every kind, their beginnings and
// ends, escapes, names, key lines, and runs long enough to push what
// follows past a Chat's context and what it holds (with and without
// white space, of hints, of escapes' first bytes).
var splitAtoms = []func(rng *rand.Rand) string{
	func(*rand.Rand) string { return " " },
	func(*rand.Rand) string { return "\n" },
	func(*rand.Rand) string { return "\r\n" },
	func(*rand.Rand) string { return "x" },
	func(*rand.Rand) string { return "-" },
	func(*rand.Rand) string { return "." },
	func(*rand.Rand) string { return "word" },
	func(*rand.Rand) string { return "é" },
	func(*rand.Rand) string { return "\u200b" },
	func(rng *rand.Rand) string { return rep("ab", rng.IntN(6000)) },
	func(rng *rand.Rand) string { return rep("a b\n", rng.IntN(3000)) },
	func(rng *rand.Rand) string { return rep("a.b-", rng.IntN(3000)) },
	func(rng *rand.Rand) string { return rep("%", rng.IntN(3000)) },
	func(rng *rand.Rand) string { return rep("%41", rng.IntN(3000)) },
	func(rng *rand.Rand) string { return rep("&#65;", rng.IntN(300)) },
	func(rng *rand.Rand) string { return rep("=", rng.IntN(100)) },
	func(rng *rand.Rand) string { return rep(`\`, rng.IntN(100)) },
	func(rng *rand.Rand) string { return rep("&", rng.IntN(100)) },
	func(rng *rand.Rand) string { return rep("key", rng.IntN(200)) },
	func(rng *rand.Rand) string { return rep("key=$1", rng.IntN(200)) },
	func(rng *rand.Rand) string { return rep("aghp_"+rep("b", 36), rng.IntN(300)) },
	func(*rand.Rand) string { return ghToken },
	func(*rand.Rand) string { return "x" + ghToken },
	func(rng *rand.Rand) string { return "ghp_" + rep("a1", rng.IntN(300)) },
	func(*rand.Rand) string { return awsKey },
	func(*rand.Rand) string { return slack },
	func(*rand.Rand) string { return anthropic },
	func(*rand.Rand) string { return openai },
	func(*rand.Rand) string { return jwt },
	func(*rand.Rand) string { return "AIza" + rep("Xy9", 12) },
	func(*rand.Rand) string { return "sk_live_" + rep("4eC39", 5) },
	func(*rand.Rand) string { return "https://hooks.slack.com/services/T000/B000/XXXXXXXX" },
	func(*rand.Rand) string { return pemKey },
	func(rng *rand.Rand) string {
		return "-----BEGIN RSA " + "PRIVATE KEY-----\n" + rep("MIIEowIBAAKCAQEA1234\n", rng.IntN(600))
	},
	func(*rand.Rand) string { return "-----END RSA " + "PRIVATE KEY-----" },
	func(*rand.Rand) string { return "-----END" },
	func(rng *rand.Rand) string { return rep("MIIEowIBAAKCAQEA1234abcd/+==\n", rng.IntN(400)) },
	func(*rand.Rand) string { return "password=hunter2hunter2" },
	func(*rand.Rand) string { return "my_api" },
	func(*rand.Rand) string { return "_key" },
	func(*rand.Rand) string { return " = " },
	func(*rand.Rand) string { return ":=" },
	func(*rand.Rand) string { return "abc123def456" },
	func(rng *rand.Rand) string { return "api_key = " + rep("a1", rng.IntN(3000)) },
	func(*rand.Rand) string { return "Authorization: Bearer abcdefghijklmnop123456" },
	func(rng *rand.Rand) string { return "Bearer" + rep(" ", rng.IntN(80)) + "abcdefghijklmnop123456" },
	func(rng *rand.Rand) string { return "Authorization: Bearer " + rep("a1", rng.IntN(5000)) },
	func(*rand.Rand) string { return "postgres://user:s3cretpw@db:5432/x" },
	func(*rand.Rand) string { return "postgres://" },
	func(*rand.Rand) string { return "user:" },
	func(*rand.Rand) string { return "@" },
	func(*rand.Rand) string { return "tok-very-secret-1234" },
	func(*rand.Rand) string { return corpusValue },
	func(*rand.Rand) string { return corpusValue[:12] },
	func(*rand.Rand) string { return corpusValue[12:] },
	func(*rand.Rand) string { return strings.ToUpper(corpusValue) },
	func(*rand.Rand) string { return reverse(corpusValue) },
	func(*rand.Rand) string { return hex.EncodeToString([]byte(corpusValue)) },
	func(*rand.Rand) string { return base64.StdEncoding.EncodeToString([]byte(corpusValue)) },
	func(*rand.Rand) string { return base64.StdEncoding.EncodeToString([]byte("ab" + corpusValue)) },
	func(rng *rand.Rand) string { return splitLong[:rng.IntN(len(splitLong))] },
	func(*rand.Rand) string { return splitLong },
	func(*rand.Rand) string { return splitLong[:600] },
	func(*rand.Rand) string { return "http://localhost:8080" },
	func(*rand.Rand) string { return "localhost:8080" },
	func(*rand.Rand) string { return "PostgreSQL" },
	func(*rand.Rand) string { return "postgres" },
	func(*rand.Rand) string { return "correct horse battery 42" },
	func(*rand.Rand) string { return percentAll(corpusToken) },
	func(*rand.Rand) string { return percentAll(corpusValue) },
	func(*rand.Rand) string { return strings.ReplaceAll(percentAll(corpusToken), "%", "%25") },
	func(*rand.Rand) string { return `\u0067hp_` + corpusToken[4:] },
	func(*rand.Rand) string { return "&#103;hp_" + corpusToken[4:] },
	func(*rand.Rand) string { return corpusToken[:10] + "=\n" + corpusToken[10:] },
	func(*rand.Rand) string { return corpusToken[:6] + "\u200b" + corpusToken[6:] },
	func(*rand.Rand) string { return "password%3D" + "abc123def456" },
	func(rng *rand.Rand) string { return "eyJ" + rep("a", rng.IntN(9000)) },
	func(*rand.Rand) string { return "gh" },
	func(*rand.Rand) string { return "sk-" },
	func(*rand.Rand) string { return "AKIA" },
	func(*rand.Rand) string { return "://" },
	func(*rand.Rand) string { return "_" },
	func(*rand.Rand) string { return "%" },
	func(*rand.Rand) string { return "=3D" },
	func(*rand.Rand) string { return "Bearer " },
}

// splitText joins up to 16 atoms.
func splitText(rng *rand.Rand) string {
	var b strings.Builder
	for range 1 + rng.IntN(16) {
		b.WriteString(splitAtoms[rng.IntN(len(splitAtoms))](rng))
	}
	return b.String()
}

// splitPieces cuts s where a stream may: into pieces of a few bytes, a
// few tens, or thousands, mixed.
func splitPieces(rng *rand.Rand, s string) []string {
	var out []string
	for s != "" {
		n := 1 + rng.IntN(4)
		switch rng.IntN(3) {
		case 1:
			n = 1 + rng.IntN(40)
		case 2:
			n = 1 + rng.IntN(20_000)
		}
		n = min(n, len(s))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// chatOf streams pieces through a new Chat and returns what it passed on.
func chatOf(r *Redactor, pieces []string) string {
	c := NewChat(r)
	var b strings.Builder
	for _, p := range pieces {
		b.WriteString(c.Write(p))
	}
	b.WriteString(c.Close())
	return b.String()
}

// TestChatEqualsRedactOnAnySplit: whatever the answer and wherever the
// stream cuts it, what a Chat passes on is Redact of the whole answer.
// Before, it was not where what came before a held tail was longer than
// the 8 KiB a Chat held or the 1 KiB of context it kept (a run decoded
// from 8 KiB before an escape, a key block's end taking all the text
// before it, a token glued to a known value longer than a Chat holds, a
// JWT or a password in a URL longer than 8 KiB): 2.5 % of these texts.
func TestChatEqualsRedactOnAnySplit(t *testing.T) {
	r := splitRedactor()
	rng := rand.New(rand.NewPCG(11, 13))
	failed := 0
	for i := range *splitCases {
		s := splitText(rng)
		pieces := splitPieces(rng, s)
		want := r.Redact(s)
		if got := chatOf(r, pieces); got != want {
			if failed++; failed <= 5 {
				t.Errorf("text %d (%d bytes, %d pieces): %s", i, len(s), len(pieces), firstDiff(got, want))
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d texts came out of the Chat otherwise than out of Redact", failed, *splitCases)
	}
}

// TestChatEqualsRedactAfterLongText: the cases the attacker review found
// and those the property test above did, each streamed in pieces of a
// few sizes, and cut in two at every byte of its end.
func TestChatEqualsRedactAfterLongText(t *testing.T) {
	r := splitRedactor()
	prose := rep("The quick brown fox jumps over the lazy dog. ", 200)
	for _, c := range []struct{ name, text string }{
		{"a token after 9 KB", prose + "token " + ghToken + " end"},
		{"a value after 9 KB", prose + "value " + corpusValue + " end"},
		{"an assignment after 9 KB", prose + "password = hunter2hunter2 end"},
		{"an escaped token after 9 KB", prose + "x " + percentAll(corpusToken) + " end"},
		{"a run of 12 KB before an escape", rep("aghp_"+rep("b", 36), 300) + rep("c", 34) + "%41 end"},
		{"a key's end line after text", "see:\n" + rep("a b\n", 600) + "MIIEowIBAAKCAQEA1234\n-----END RSA " + "PRIVATE KEY-----\nend"},
		{"a token glued to a long value", "v " + splitLong + `\u0067hp_` + corpusToken[4:] + " end"},
		{"a JWT longer than 8 KB", "Cookie eyJ" + rep("a", 9000) + ".eyJabcdefghij.sigabcdefgh end"},
		{"a URL password longer than 8 KB", "postgres://user:" + rep("p", 9000) + "@db end"},
		{"an escaped name before its value", rep("%41", 900) + "password%3Dabc123def456" + rep("%41", 300) + "gh"},
		{"a name inside a key block's end", "-----BEGIN RSA " + "PRIVATE KEY-----\n" + rep("MIIEowIBAAKCAQEA1234\n", 500) + "sk------END RSA " + "PRIVATE KEY-----password%3Dabc123def456" + rep("a.b-", 300)},
		{"an end line masked by a block found decoded", "-----BEGIN RSA " + "PRIVATE KEY-----\n" + rep("MIIEowIBAAKCAQEA1234\n", 500) + "\u200b" + pemKey + "after"},
		{"a name after a JWT, escaped", "Bearer " + jwt + jwt + "password%3D" + "abc123def456word\u200b" + awsKey + rep("%", 40) + " end"},
		{"a value a long known value ends", "api_key = " + rep("a1", 2020) + "&#103;hp_" + corpusToken[4:] + splitLong + " end"},
		{"a name after a known value, escaped", rep("a b\n", 500) + "=3D" + splitLong[:600] + "password%3Dabc123def456" + "YWJ" + " end"},
		{"a stripe key's end, a name decoded", "sk_live_" + rep("4eC39", 5) + "password%3Dabc123def456-----END" + strings.ReplaceAll(percentAll(corpusToken), "%", "%25") + "postgres://x"},
		{"a key block's end beside an escape", "x " + awsKey + rep("=", 30) + "-----BEGIN RSA " + "PRIVATE KEY-----\n" + rep("MIIEowIBAAKCAQEA1234abcd/+==\n", 400) + pemKey + "\u200b"},
		{"quoted-printable's other escapes", "Bearer" + rep(" ", 44) + "abcdefghijklmnop123456" + rep("a.b-", 1400) + rep("=", 34) + hex.EncodeToString([]byte(corpusValue)) + splitLong + " and %3D"},
	} {
		want := r.Redact(c.text)
		for _, n := range []int{7, 4096} {
			if got := chatPieces(r, []string{c.text}, n); got != want {
				t.Errorf("%s, in pieces of %d: %s", c.name, n, firstDiff(got, want))
				break
			}
		}
		for cut := max(0, len(c.text)-16); cut < len(c.text); cut++ {
			if got := chatOf(r, []string{c.text[:cut], c.text[cut:]}); got != want {
				t.Errorf("%s, cut at %d: %s", c.name, cut, firstDiff(got, want))
				break
			}
		}
	}
}
