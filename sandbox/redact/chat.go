package redact

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// chatContext is how much of the text a Chat passed on it keeps, to
// redact what follows in its context: a value after "password = " or
// "Authorization: Bearer " that came in an earlier piece.
const chatContext = 1024

// Chat redacts text that arrives in small pieces to be shown as it comes:
// a model's answer, streamed. Unlike Writer, which holds kilobytes, it
// holds back only what could still become, or be part of, a secret: the
// last word (a token has no space in it), a tail that begins a known
// value, a match that reaches the end (a key block without its end line
// yet) — so a chat's text is delayed by about a word. What it passed on,
// joined (Text), is the answer as it is stored.
type Chat struct {
	r *Redactor
	// ctx is the end of what was passed on, raw; pending what is held.
	ctx, pending string
	out          strings.Builder
}

// NewChat returns a Chat that redacts with r.
func NewChat(r *Redactor) *Chat { return &Chat{r: r} }

// Write takes the next piece and returns what can be shown now, redacted
// (often "", or less than the piece).
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
	hs := c.r.hits(text, false)
	cut := len(text)
	if !final {
		cut = c.holdFrom(text, base, hs)
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
	return out
}

// holdFrom is where the text that must wait begins: after the last white
// space, or earlier where a match, a known value's start or a key block
// could still go on past the end.
func (c *Chat) holdFrom(text string, base int, hs []hit) int {
	cut := base
	if i := lastBreak(text[base:]); i >= 0 {
		_, n := utf8.DecodeRuneInString(text[base+i:])
		cut = base + i + n
	} else if len(text)-base > minCarry {
		// One word longer than any token: pass it on, but for what a
		// token could still be.
		cut = len(text) - minCarry
		for cut > base && !utf8.RuneStart(text[cut]) {
			cut--
		}
	}
	// A begin line not yet ended may be a key block's.
	if i := strings.LastIndex(text[base:], "-----BEGIN"); i >= 0 && !strings.Contains(text[base+i:], "\n") {
		cut = min(cut, base+i)
	}
	for _, h := range hs {
		if h.from < cut && (cut < h.to || h.to == len(text)) {
			cut = max(base, min(cut, h.start))
		}
	}
	if c.r != nil {
		for _, l := range c.r.literals {
			if p := startsValue(text, l); p >= base && p < cut {
				cut = p
			}
		}
	}
	return cut
}

// lastBreak returns where the last white space in s is, but for the line
// breaks of quoted-printable ("=" before them), which a run of encoded
// text goes on across (see runAround); -1 if there is none.
func lastBreak(s string) int {
	for {
		i := strings.LastIndexFunc(s, unicode.IsSpace)
		if i < 0 || !softBreak(s, i) {
			return i
		}
		s = s[:i]
	}
}

// softBreak says whether the white space at i is part of a
// quoted-printable soft line break.
func softBreak(s string, i int) bool {
	return s[i] == '\n' && (i >= 1 && s[i-1] == '=' || i >= 2 && s[i-1] == '\r' && s[i-2] == '=') ||
		s[i] == '\r' && i >= 1 && s[i-1] == '=' && (i+1 == len(s) || s[i+1] == '\n')
}

// startsValue returns where the longest end of text that begins l (but
// is not all of it) starts, or -1. Only forms with white space in them
// need it: the last word is held anyway.
func startsValue(text string, l literal) int {
	if strings.IndexFunc(l.value, unicode.IsSpace) < 0 {
		return -1
	}
	for n := min(len(l.value)-1, len(text)); n > 0; n-- {
		if commonPrefix(text[len(text)-n:], l.value, l.fold) == n {
			return len(text) - n
		}
	}
	return -1
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
