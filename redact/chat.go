package redact

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// chatContext is how much of the text a Chat passed on it keeps, to
// redact what follows in its context: a value after "password = " or
// "Authorization: Bearer " that came in an earlier piece. Every pattern's
// context before the value it replaces is shorter (a name of at most
// 2×128 bytes and its spaces, a URL's scheme and user part of at most
// 32 and 128 characters), so that what the chat shows is what Redact of
// the whole answer gives. See contextStart.
const chatContext = 1024

// maxHold is the most a Chat holds back: past it, what may still become
// a secret is passed on. No pattern's match, nor what comes before a
// match has begun (a JWT before its signature), is longer, but for a
// bearer token with its header (held to its bound) and for a key block
// and a known value's form: one of those still going on when it is held
// this long is passed on as its marker, and what continues it is
// swallowed (span).
const maxHold = minCarry

// Chat redacts text that arrives in small pieces to be shown as it comes:
// a model's answer, streamed. Unlike Writer, which holds kilobytes, it
// holds back only what more text could still make part of a redacted
// span, or change: the first letters of a token format ("ghp_", "sk-an")
// or of a known value's form, a value after its name ("password=" is
// shown, what follows is held), an escape begun ("%4"), a match that
// reaches the end (a key block without its end line yet), the lines that
// could still be a key's before its end line; see hold.go. A word after
// which the model pauses is shown at once, but for a line's first word
// while it could still be part of a key. What it holds is bounded
// (maxHold), and so is what it keeps of what it passed on (contextStart):
// a piece costs at most about that. What it passed on, joined (Text), is
// the answer as Redact makes it whole, wherever the stream cut it, and as
// it is stored.
type Chat struct {
	r *Redactor
	// ctx is the end of what was passed on, pending what is held, and
	// prior the hits passed on in ctx (found again, they are not looked
	// at again, and they mask the text as in the whole answer).
	ctx, pending string
	prior        []hit
	out          strings.Builder
	// memo is what is known of ctx and pending; memo.off is where ctx
	// starts in the stream.
	memo memo
	// open is a secret passed on as its marker before it ended.
	open *span
	// midLine says ctx does not start a line.
	midLine bool
}

// A span is a secret a Chat passed on as its marker while it still went
// on: what continues it is swallowed (only its line breaks are passed on,
// as a marker keeps the lines of what it replaces) until it ends.
type span struct {
	r     *Redactor
	tails []tail
	// tail is the end of what was swallowed (maxHold at most), and stage
	// the secret's (see hit): what follows the secret is looked at after
	// it, as in the whole answer, where the patterns before the secret's
	// see it and those after it see it masked; a key block's end line is
	// looked for in it.
	tail  string
	stage int
}

// A tail is how a secret that reaches the end of a text may go on: a key
// block up to its end line, or a known value's form (value, compared
// ignoring case if fold) of which off bytes came.
type tail struct {
	block bool
	value string
	fold  bool
	off   int
}

// follow returns how much of s continues the secret, and whether it ended
// there (if not, all of s continues it).
func (sp *span) follow(s string) (int, bool) {
	n, ended := 0, true
	var left []tail
	for _, t := range sp.tails {
		if t.block {
			if e := sp.blockEnd(s); e >= 0 {
				n = max(n, e)
				continue
			}
		} else {
			k := commonPrefix(s, t.value[t.off:], t.fold)
			if k < len(s) || t.off+k == len(t.value) {
				n = max(n, k)
				continue
			}
			t.off += k
		}
		left, ended = append(left, t), false
	}
	if !ended {
		sp.tails = left
		sp.swallowed(s)
		return len(s), false
	}
	sp.swallowed(s[:n])
	return n, true
}

// blockEnd returns where in s the key block swallowed ends (the end of
// its end line), or -1. An end line that a known value or a secret found
// decoded covers is none: the block's pattern sees it masked, as in the
// whole answer (a secret decoded reaches no further back than tail).
func (sp *span) blockEnd(s string) int {
	text := sp.tail + s
	var hs []hit
	looked := false
	for off := max(0, len(sp.tail)-keyEndWindow); off < len(text); {
		m := keyEndRE().FindStringIndex(text[off:])
		if m == nil {
			return -1
		}
		from, to := off+m[0], off+m[1]
		if to <= len(sp.tail) {
			off = from + 1
			continue
		}
		if !looked {
			hs, looked = sp.r.stagedHits(text, sp.r.scan(text), false, 0), true
		}
		if !slices.ContainsFunc(hs, func(h hit) bool { return h.stage < sp.stage && h.start < to && h.end > from }) {
			return to - len(sp.tail)
		}
		off = from + 1
	}
	return -1
}

// swallowed keeps the end of what was swallowed, with s.
func (sp *span) swallowed(s string) {
	sp.tail += s
	if n := len(sp.tail) - maxHold; n > 0 {
		for n < len(sp.tail) && !utf8.RuneStart(sp.tail[n]) {
			n++
		}
		sp.tail = sp.tail[n:]
	}
}

// keyEndWindow is how much of what a Chat swallowed it looks back at
// for an end line that began in an earlier piece: more than the longest.
const keyEndWindow = 128

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
	var out strings.Builder
	if c.open != nil {
		n, ended := c.open.follow(c.pending)
		if final {
			n, ended = len(c.pending), true
		}
		out.WriteString(strings.Repeat("\n", strings.Count(c.pending[:n], "\n")))
		c.pending = c.pending[n:]
		c.memo.off += n
		if ended {
			// What follows the secret is looked at with the secret's end
			// before it, as in the whole answer.
			ctx := c.open.tail
			if k := len(ctx) - 2*chatContext; k > 0 {
				for k < len(ctx) && !utf8.RuneStart(ctx[k]) {
					k++
				}
				ctx = ctx[k:]
			}
			n := len(ctx)
			c.ctx, c.prior, c.midLine = ctx, []hit{{end: n, to: n, kind: "span", stage: c.open.stage}}, true
			c.open = nil
		}
	}
	if c.open == nil && c.pending != "" {
		out.WriteString(c.redact(final))
	}
	c.out.WriteString(out.String())
	return out.String()
}

// redact passes on what of ctx and pending can be shown, redacted.
func (c *Chat) redact(final bool) string {
	text := c.ctx + c.pending
	base := len(c.ctx)
	sc := c.r.scan(text)
	sc.prior, sc.midLine, sc.fixed = c.prior, c.midLine, base
	all := c.r.stagedHits(text, sc, false, 0)
	hs := merge(slices.Clone(all))
	c.memo.found(all)
	cut := len(text)
	var open *hit
	if !final {
		cut, open = c.holdFrom(text, base, sc, hs, all)
	}
	if cut <= base {
		return ""
	}
	var in []hit
	for _, h := range hs {
		if h.end <= base || h.start >= cut {
			continue
		}
		// A match that began in what was passed on is redacted from here.
		h.start = max(h.start, base)
		h.end = min(h.end, cut)
		in = append(in, h)
	}
	out := render(text[base:cut], shift(slices.Clone(in), base))
	if open != nil {
		// A secret still going on when held maxHold: its marker is passed
		// on, what continues it is swallowed, and what follows it is
		// looked at as after a marker, without context.
		stage := literalStage
		if slices.ContainsFunc(open.tails, func(t tail) bool { return t.block }) {
			stage = patterns()[privateKey].stage
		}
		c.open = &span{r: c.r, tails: open.tails, stage: stage}
		c.open.swallowed(text)
		c.ctx, c.pending, c.prior, c.midLine = "", "", nil, true
		c.memo.off += len(text)
		c.memo.forget(c.memo.off)
		return out
	}
	// A line break inside a secret is masked as the secret is: no line
	// starts after it.
	masked := func(i int) bool {
		in := func(h hit) bool { return h.start <= i && i < h.end }
		return slices.ContainsFunc(all, in) || slices.ContainsFunc(c.prior, in)
	}
	keep, midLine := contextStart(text, cut, c.midLine, masked)
	// The hits passed on, of before and of now, that reach into what is
	// kept.
	var prior []hit
	for _, h := range slices.Concat(c.prior, all) {
		if h.start < cut && h.to > keep {
			h.start, h.from = max(h.start, keep), max(h.from, keep)
			prior = append(prior, h)
		}
	}
	c.ctx, c.pending, c.prior, c.midLine = text[keep:cut], text[cut:], shift(prior, keep), midLine
	c.memo.off += keep
	c.memo.forget(c.memo.off)
	return out
}

// contextStart returns where the context kept of text passed on up to
// cut starts, and whether it starts inside a line (midLine says whether
// text does; masked whether a byte of it is a secret's, masked). It keeps chatContext at least, and starts after a byte
// that is no part of a word, a name, a URL's scheme or an escape, so
// that the patterns, and the decoding, see the same start there as in the
// whole answer. With none such in the chatContext before, it keeps twice
// chatContext: what its start may seem to begin (a word, a name) is then
// further back than any pattern looks from a match that is not passed
// on yet (a name before its value, an escaped one included).
func contextStart(text string, cut int, midLine bool, masked func(int) bool) (int, bool) {
	keep := cut - chatContext
	if keep <= 0 {
		return 0, midLine
	}
	lo := max(0, cut-2*chatContext)
	for k := keep; k > lo; k-- {
		if safeStart(text, k) {
			return k, text[k-1] != '\n' || masked(k-1)
		}
	}
	if lo == 0 {
		return 0, midLine
	}
	for lo < cut && !utf8.RuneStart(text[lo]) {
		lo++
	}
	return lo, true
}

// safeStart reports whether text from k is seen as in a longer text: the
// byte before k is no part of a word, a name, a URL's scheme or an
// escape (which decodes to what may be one), nor of a character.
func safeStart(text string, k int) bool {
	if c := text[k-1]; nameChar(c) || c == '+' || c >= utf8.RuneSelf {
		return false
	}
	for j := max(0, k-maxEscape); j < k; j++ {
		if n := escapeLen(text, j); n > 0 && j+n >= k {
			return false
		}
	}
	return true
}

// holdFrom is where the text that must wait begins: what more text could
// change (unsettled), but never more than maxHold bytes, and never inside
// a character. hs are the hits of text, merged, and all the same before
// they were (each with its stage). Past maxHold, a secret that has ended is passed on whole,
// one that may still go on is held if its pattern bounds it (it is no
// longer than maxHold and a header), or else (a key block, a known
// value's form) returned to be passed on as its marker.
func (c *Chat) holdFrom(text string, base int, sc scanned, hs, all []hit) (int, *hit) {
	cut, fresh := c.r.unsettled(text, sc, all, 0, &c.memo)
	if len(text)-cut > maxHold {
		cut = len(text) - maxHold
		for i := range hs {
			h := &hs[i]
			if h.start >= cut || h.to <= cut && h.to < fresh {
				continue
			}
			if h.to < fresh {
				cut = h.to
				continue
			}
			if len(h.tails) > 0 {
				return len(text), h
			}
			cut = h.start
			break
		}
	}
	cut = max(cut, base)
	for cut > base && cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return cut, nil
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
