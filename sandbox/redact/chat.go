package redact

import (
	"strings"
	"unicode/utf8"
)

// chatContext is how much of the text a Chat passed on it keeps, to
// redact what follows in its context: a value after "password = " or
// "Authorization: Bearer " that came in an earlier piece.
const chatContext = 1024

// Chat redacts text that arrives in small pieces to be shown as it comes:
// a model's answer, streamed. Unlike Writer, which holds kilobytes, it
// holds back only what more text could still make part of a redacted
// span, or change: the first letters of a token format ("ghp_", "sk-an")
// or of a known value's form, a value after its name ("password=" is
// shown, what follows is held), an escape begun ("%4"), a match that
// reaches the end (a key block without its end line yet); see hold.go.
// A word after which the model pauses is shown at once. What it passed
// on, joined (Text), is the answer as Redact makes it whole, and as it
// is stored.
type Chat struct {
	r *Redactor
	// ctx is the end of what was passed on, raw; pending what is held.
	ctx, pending string
	out          strings.Builder
	// memo is what is known of ctx and pending; memo.off is where ctx
	// starts in the stream.
	memo memo
}

// NewChat returns a Chat that redacts with r.
func NewChat(r *Redactor) *Chat { return &Chat{r: r, memo: memo{dead: map[[2]int]int{}}} }

// Write takes the next piece and returns what can be shown now, redacted
// (often all of it, sometimes less, or "").
func (c *Chat) Write(piece string) string {
	c.pending += piece
	return c.pass(false)
}

// Close returns the rest, redacted. The Chat can be written to again.
func (c *Chat) Close() string { return c.pass(true) }

// Text is everything passed on so far, redacted.
func (c *Chat) Text() string { return c.out.String() }

func (c *Chat) pass(final bool) string {
	if c.pending == "" {
		return ""
	}
	text := c.ctx + c.pending
	base := len(c.ctx)
	sc := c.r.scan(text)
	hs := c.r.hitsOf(text, sc, false, 0)
	cut := len(text)
	if !final {
		cut = c.holdFrom(text, base, sc, hs)
	}
	if cut <= base {
		return ""
	}
	var in []hit
	for _, h := range hs {
		if h.end <= base || h.start >= cut {
			continue
		}
		// A match that began in what was passed on (a key block's begin
		// line) is redacted from here.
		h.start = max(h.start, base)
		h.end = min(h.end, cut)
		in = append(in, h)
	}
	out := render(text[base:cut], shift(in, base))
	c.out.WriteString(out)
	keep := max(0, cut-chatContext)
	for keep < cut && !utf8.RuneStart(text[keep]) {
		keep++
	}
	c.ctx, c.pending = text[keep:cut], text[cut:]
	c.memo.off += keep
	c.memo.forget(c.memo.off)
	return out
}

// holdFrom is where the text that must wait begins: what more text could
// change (unsettled), but for a tail longer than any token, of which all
// but the last minCarry bytes are passed on (unless a match holds them),
// and never inside a character.
func (c *Chat) holdFrom(text string, base int, sc scanned, hs []hit) int {
	cut := c.r.unsettled(text, sc, hs, 0, &c.memo)
	if len(text)-cut > minCarry {
		cut = settle(len(text)-minCarry, text, hs)
	}
	cut = max(cut, base)
	for cut > base && cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return cut
}

// shift moves hits by -base.
func shift(hs []hit, base int) []hit {
	for i := range hs {
		hs[i].start -= base
		hs[i].end -= base
		hs[i].from -= base
		hs[i].to -= base
	}
	return hs
}
