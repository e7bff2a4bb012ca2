package tokens

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer/codec"
)

// The encodings' own split expressions, as the tokenizer library compiles
// them: split must cut every text exactly where they do.
var splitExprs = map[bool]string{
	true:  `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	false: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

func regexPieces(t *testing.T, re *regexp2.Regexp, s string) []string {
	t.Helper()
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func splitPieces(sp splitter, s string) []string {
	var out []string
	sp.split(s, func(p string) { out = append(out, p) })
	return out
}

// corpus is real text: this repository's Go and Markdown files and the
// vendored Go sources.
func corpus(t *testing.T) []string {
	t.Helper()
	var out []string
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".go" || ext == ".md" || ext == ".lua" || ext == ".ts") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if utf8.Valid(b) {
				out = append(out, string(b))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("found %d source files under %s, want the repository's", len(out), root)
	}
	return out
}

// tricky are the characters where the expressions' classes differ:
// apostrophes and the letters of contractions in both cases (with the
// Kelvin sign and long s, which fold to k and s), line breaks and
// Unicode spaces, marks alone and after letters, title case, modifier and
// other letters, numbers that are not digits, slashes and symbols.
var tricky = []string{
	"'", "s", "S", "t", "T", "re", "RE", "rE", "ve", "VE", "m", "M", "ll", "LL", "lL", "d", "D", "ſ", "K", "İ",
	" ", "  ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\u00a0", "\u0085", "\u2028", "\u3000", "\u2003",
	"\u0301", "e\u0301", "\u0903", "ǅ", "ʰ", "ª", "中文", "ह", "ب", "Ω", "ω", "Ǆ", "ǆ",
	"0", "12", "3456", "½", "Ⅻ", "٣", "²",
	"/", "//", ".", "(", ")", "{", "}", "_", "-", "\"", "`", "€", "😀", "\u200d",
	"hello", "World", "HTTPServer", "getURL", "x", "Q",
}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(24) {
		b.WriteString(tricky[r.IntN(len(tricky))])
	}
	return b.String()
}

func TestSplitMatchesTheEncodingsExpressions(t *testing.T) {
	texts := corpus(t)
	r := rand.New(rand.NewPCG(1, 2))
	for range 30_000 {
		texts = append(texts, randomText(r))
	}
	for _, o200k := range []bool{true, false} {
		re := regexp2.MustCompile(splitExprs[o200k], regexp2.None)
		sp := splitter{o200k: o200k}
		bad := 0
		for _, s := range texts {
			want, got := regexPieces(t, re, s), splitPieces(sp, s)
			if !slices.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Errorf("o200k=%v: piece %d of %q: got %q, want %q", o200k, i, s[:min(len(s), 200)],
					got[i:min(len(got), i+3)], want[i:min(len(want), i+3)])
				if bad++; bad > 10 {
					t.FailNow()
				}
			}
		}
	}
}

// TestCountIsTheLibrarys: counting piece by piece with the cache gives the
// library's count, on real text, random text and invalid UTF-8.
func TestCountIsTheLibrarys(t *testing.T) {
	texts := corpus(t)
	r := rand.New(rand.NewPCG(3, 4))
	for range 3_000 {
		texts = append(texts, randomText(r))
	}
	texts = append(texts, "bad \xff\xfe bytes", "cut \xe4\xb8 here", "")
	for _, enc := range []struct {
		name string
		lib  *codec.Codec
	}{{O200kBase, codec.NewO200kBase()}, {CL100kBase, codec.NewCl100kBase()}} {
		c := For(enc.name)
		for range 2 { // cold, then from the cache
			for _, s := range texts {
				want, err := enc.lib.Count(s)
				if err != nil {
					t.Fatal(err)
				}
				if got := c.Count(s); got != want {
					t.Fatalf("%s: Count(%q) = %d, the library counts %d", enc.name, s[:min(len(s), 200)], got, want)
				}
			}
		}
	}
}

// BenchmarkMicroCountSourceCode counts vendored Go source (go/parser's
// parser.go) exactly: "library" with the tokenizer library alone, as
// bridle did before, "split" as Count does now (its caches warm after the
// first round: a file read again), "new-lines" with the pieces known but
// no line (a file read for the first time, in a session that reads code).
func BenchmarkMicroCountSourceCode(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("..", "testdata", "gosrc", "parser.go"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(src)
	b.Run("library", func(b *testing.B) {
		lib := codec.NewO200kBase()
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if _, err := lib.Count(s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("split", func(b *testing.B) {
		c := For(O200kBase)
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			c.Count(s)
		}
	})
	// The same with no line of it counted before: a file read for the
	// first time (its pieces known, as in a session that reads code).
	b.Run("new-lines", func(b *testing.B) {
		c := For(O200kBase).(*exact)
		c.Count(s)
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			c.mu.Lock()
			clear(c.lines)
			c.lineBytes = 0
			c.mu.Unlock()
			c.Count(s)
		}
	})
}
