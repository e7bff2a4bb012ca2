// Package tokens counts tokens the way a model family does: exactly with
// the tiktoken encodings OpenAI publishes (embedded, no download), and by
// a calibrated estimate for families without a public encoder, which the
// context window corrects with the usage providers report.
package tokens

import (
	"sync"

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
type exact struct {
	name  string
	make  func() *codec.Codec
	once  sync.Once
	codec *codec.Codec
}

func newExact(name string, make func() *codec.Codec) *exact { return &exact{name: name, make: make} }

func (e *exact) Count(s string) int {
	if s == "" {
		return 0
	}
	e.once.Do(func() { e.codec = e.make() })
	n, err := e.codec.Count(s)
	if err != nil {
		// Only strict mode fails, on invalid UTF-8; never undercount.
		return Estimate{}.Count(s)
	}
	return n
}

func (e *exact) Exact() bool  { return true }
func (e *exact) Name() string { return e.name }
