package tokens

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"
)

// lineTexts are texts whose lines end and start in every way the split
// treats apart: breaks after punctuation, slashes after breaks (o200k
// takes them with the punctuation), blank and space-only lines, "\r\n",
// numbers that start lines (read_file's, a log's, one followed by another
// numeral), and the corpus's real files.
func lineTexts(t *testing.T) []string {
	texts := corpus(t)
	edges := []string{"\n", "\r\n", "\n\n", "\n/", "\n//", "\n \n", "\n\t\n", " \n", "}\n", ")\n//", "\n\r", "\n   12\t", "\n123\tx", "\n12½", "\n7", "\n 3 ", "\n½"}
	r := rand.New(rand.NewPCG(7, 8))
	for range 3_000 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(randomText(r))
			b.WriteString(edges[r.IntN(len(edges))])
		}
		texts = append(texts, b.String())
	}
	var read strings.Builder
	for i, l := range strings.SplitAfter(texts[0], "\n") {
		fmt.Fprintf(&read, "%6d\t%s", i+1, l)
	}
	return append(texts, read.String())
}

// Every place countLines cuts a text (a line's end, a leading number's)
// is a boundary of the text's own split: the pieces are the same.
func TestLinesEndWhereTheSplitHasABoundary(t *testing.T) {
	for _, o200k := range []bool{true, false} {
		sp := splitter{o200k: o200k}
		for _, s := range lineTexts(t) {
			bounds := map[int]bool{len(s): true}
			at := 0
			sp.split(s, func(p string) { at += len(p); bounds[at] = true })
			for i := 0; i < len(s); {
				end := lineEnd(s, i)
				if !bounds[end] {
					t.Fatalf("o200k=%v: a line of %q ends at %d, inside a piece", o200k, s[max(0, end-20):min(len(s), end+20)], end)
				}
				if k := numberPrefix(s[i:end]); k > 0 && !bounds[i+k] {
					t.Fatalf("o200k=%v: the number starting %q ends at %d, inside a piece", o200k, s[i:min(end, i+40)], k)
				}
				i = end
			}
		}
	}
}

// Counted by line, cold and from the cache, a text counts what the
// library counts.
func TestCountByLineIsTheLibrarys(t *testing.T) {
	texts := lineTexts(t)
	for _, enc := range []struct {
		name string
		lib  *codec.Codec
	}{{O200kBase, codec.NewO200kBase()}, {CL100kBase, codec.NewCl100kBase()}} {
		c := For(enc.name)
		for round := range 2 {
			for _, s := range texts {
				want, err := enc.lib.Count(s)
				if err != nil {
					t.Fatal(err)
				}
				if got := c.Count(s); got != want {
					t.Fatalf("%s, round %d: Count(%.120q) = %d, the library counts %d", enc.name, round, s, got, want)
				}
			}
		}
	}
}

// The line cache stays within its bounds.
func TestLineCacheBounds(t *testing.T) {
	c := For(O200kBase).(*exact)
	var b strings.Builder
	for i := range maxLines + 10 {
		fmt.Fprintf(&b, "distinct line %x\n", i)
	}
	c.Count(b.String())
	if len(c.lines) > maxLines || c.lineBytes > maxLineBytes {
		t.Fatalf("%d lines, %d bytes kept", len(c.lines), c.lineBytes)
	}
	long := strings.Repeat("word ", maxLine) + "\n"
	c.Count(long)
	if _, ok := c.lines[long]; ok {
		t.Fatal("a line over maxLine was kept")
	}
}
