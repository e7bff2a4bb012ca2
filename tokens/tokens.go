// Package tokens counts tokens the way a model family does: exactly with
// the tiktoken encodings OpenAI publishes (embedded, no download), and by
// a calibrated estimate for families without a public encoder, which the
// context window corrects with the usage providers report.
package tokens

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer/codec"
)

// Counter counts the tokens of a text.
type Counter interface {
	Count(s string) int
	// Exact reports whether Count is the model's own tokenization.
	Exact() bool
	// Name names the encoding ("o200k_base") or the estimate ("estimate").
	Name() string
}

// Encodings bridle counts exactly.
const (
	O200kBase  = "o200k_base"
	CL100kBase = "cl100k_base"
)

// For returns the counter for a tokenizer family as the model catalogue
// names it. Families without an embedded encoding get the estimate.
func For(family string) Counter {
	switch family {
	case O200kBase:
		return newExact(family, codec.NewO200kBase)
	case CL100kBase:
		return newExact(family, codec.NewCl100kBase)
	}
	return Estimate{}
}

// exact counts with a tiktoken encoding. The codec (its vocabulary is a
// few megabytes) is built on first use, so a process that never counts
// with it never pays for it. Only the two encodings current models use are
// linked in: the older ones would add megabytes to the binary.
//
// The text is split into the encoding's pieces by hand (split.go) and
// each piece's count is kept: source code repeats its words, so after the
// first files most pieces are a map lookup, and the codec, whose own
// splitting runs a backtracking regular expression, sees only new ones.
// A piece alone splits as it did inside the text (split_test.go), so its
// count is its share of the text's. Whole lines are kept too (lines.go):
// a line seen before is one lookup.
type exact struct {
	name  string
	make  func() *codec.Codec
	once  sync.Once
	codec *codec.Codec
	split splitter

	mu     sync.Mutex
	pieces map[string]int32
	// lines holds the counts of whole lines (lines.go), lineBytes the
	// bytes of its keys.
	lines     map[string]int32
	lineBytes int
}

// Bounds of the piece cache: a piece longer than maxPiece is counted each
// time (long pieces rarely repeat), and the cache starts again when full.
const (
	maxPiece  = 32
	maxPieces = 1 << 16
)

func newExact(name string, make func() *codec.Codec) *exact {
	return &exact{name: name, make: make, split: splitter{o200k: name == O200kBase}}
}

func (e *exact) Count(s string) int {
	if s == "" {
		return 0
	}
	e.once.Do(func() {
		e.codec = e.make()
		e.pieces, e.lines = make(map[string]int32), make(map[string]int32)
	})
	if !utf8.ValidString(s) {
		// The codec reads invalid bytes as U+FFFD; split cannot.
		return e.library(s)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.countLines(s)
}

// countPieces counts s piece by piece through the piece cache, with e.mu
// locked.
func (e *exact) countPieces(s string) int {
	n := 0
	e.split.split(s, func(p string) {
		if len(p) == 1 {
			n++ // every byte is a token of its own in both encodings
			return
		}
		if len(p) > maxPiece {
			n += e.library(p)
			return
		}
		c, ok := e.pieces[p]
		if !ok {
			c = int32(e.library(p))
			if len(e.pieces) >= maxPieces {
				clear(e.pieces)
			}
			e.pieces[strings.Clone(p)] = c
		}
		n += int(c)
	})
	return n
}

// library counts with the codec alone.
func (e *exact) library(s string) int {
	n, err := e.codec.Count(s)
	if err != nil {
		// Only strict mode fails, on invalid UTF-8; never undercount.
		return Estimate{}.Count(s)
	}
	return n
}

func (e *exact) Exact() bool  { return true }
func (e *exact) Name() string { return e.name }
