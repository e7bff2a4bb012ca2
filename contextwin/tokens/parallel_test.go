package tokens

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"
)

// TestCountInPartsIsTheLibrarys: a text counted in parts, cut anywhere
// (inside words, space runs, line breaks, multi-byte characters), counts
// what the library counts; real text always meets, so one core is never
// left to do it again.
func TestCountInPartsIsTheLibrarys(t *testing.T) {
	texts := corpus(t)
	r := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		var b strings.Builder
		for b.Len() < 2000 {
			b.WriteString(randomText(r))
		}
		texts = append(texts, b.String())
	}
	for _, enc := range []struct {
		name string
		lib  *codec.Codec
	}{{O200kBase, codec.NewO200kBase()}, {CL100kBase, codec.NewCl100kBase()}} {
		c := For(enc.name).(*exact)
		c.Count("warm") // builds the codec
		for i, s := range texts {
			want, err := enc.lib.Count(s)
			if err != nil {
				t.Fatal(err)
			}
			k := 2 + i%7
			got, ok := c.countParts(s, k)
			if !ok {
				t.Errorf("%s: %q in %d parts: a part was not met", enc.name, s[:min(len(s), 80)], k)
				continue
			}
			if got != want {
				t.Errorf("%s: %q in %d parts counts %d, the library %d", enc.name, s[:min(len(s), 80)], k, got, want)
			}
		}
	}
}

// A text whose splits never meet (a long run of digits, split three by
// three from wherever a part starts) is counted on one core, rightly.
func TestCountInPartsGivesUpWhenPartsDoNotMeet(t *testing.T) {
	s := strings.Repeat("7", 3*parallelMin+1)
	c := For(O200kBase).(*exact)
	c.Count("warm")
	if _, ok := c.countParts(s, 3); ok {
		t.Fatal("the parts of a run of digits met; want them not to")
	}
	want, err := codec.NewO200kBase().Count(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Count(s); got != want {
		t.Fatalf("Count = %d, the library counts %d", got, want)
	}
}
