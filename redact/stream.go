package redact

import (
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// window is how much a Writer redacts at a time, besides the carry-over.
const window = 64 * 1024

// minCarry is the least a Writer keeps back from each window, to be
// redacted again with the next one, so that no secret is cut in two
// between windows: a secret that starts before the cut ends within the
// carry-over, and is found whole. It must cover the longest match of a
// pattern with its context. The token formats are short (a GitHub
// fine-grained token is 93 bytes, an Anthropic key about 110), an
// assignment is a name and a value on a line, and the longest are JWTs in
// bearer headers: servers cap a request's headers at 8 KiB (nginx's
// large_client_header_buffers, Apache's LimitRequestFieldSize), so 8 KiB
// covers any token that was ever usable in one. Private key blocks are
// held whole by other means (see Writer). A literal value longer than
// this raises the Writer's carry-over to its length.
const minCarry = 8 * 1024

// Writer redacts a stream before passing it on. It redacts a window at a
// time and keeps back the end of each (the carry-over) to redact again
// with what follows, and never cuts inside a secret it found: a secret
// split by a window's end is redacted whole. A private key block is held
// until its end line, up to a window; a longer one is redacted as it
// comes until its end line.
type Writer struct {
	r     *Redactor
	w     io.Writer
	buf   []byte
	carry int
	// inBlock says the text passed on so far ends inside a private key
	// block: what follows is key until the block's end line.
	inBlock bool
}

// NewWriter returns a writer that redacts what it passes on to w.
func NewWriter(r *Redactor, w io.Writer) *Writer {
	carry := minCarry
	if r != nil && len(r.literals) > 0 {
		// Longest first: the longest value must fit the carry-over.
		carry = max(carry, len(r.literals[0].value))
	}
	return &Writer{r: r, w: w, carry: carry}
}

// Write implements io.Writer. It always consumes all of p.
func (w *Writer) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for len(w.buf) >= window+w.carry {
		if err := w.flush(false); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Close redacts and passes on what is still held.
func (w *Writer) Close() error {
	for len(w.buf) >= window+w.carry { // left by a failed Write
		if err := w.flush(false); err != nil {
			return err
		}
	}
	if len(w.buf) == 0 {
		return nil
	}
	return w.flush(true)
}

// flush redacts and passes on the buffer but for the carry-over, or all
// of it at the end.
func (w *Writer) flush(final bool) error {
	// One window and its carry-over at a time, however much one Write
	// brought.
	s := string(w.buf[:min(len(w.buf), window+w.carry)])
	if w.inBlock {
		if m := keyEndRE().FindStringIndex(s); m != nil {
			// The long key block ends here: all of it up to its end line
			// is key (its marker went before).
			w.inBlock = false
			if err := w.pass(strings.Repeat("\n", strings.Count(s[:m[1]], "\n")), m[1]); err != nil || len(w.buf) == 0 {
				return err
			}
			if final || len(w.buf) >= window+w.carry {
				return w.flush(final)
			}
			return nil
		}
	}
	if w.inBlock {
		// Still inside a long key block: pass on only its line breaks
		// (the marker went before), and keep the carry-over, where the
		// end line may begin.
		cut := len(s)
		if !final {
			cut = w.cutAt(s)
		}
		return w.pass(strings.Repeat("\n", strings.Count(s[:cut], "\n")), cut)
	}
	hs := w.r.hits(s, false)
	cut := len(s)
	if !final {
		cut = w.cutAt(s)
		cut = safeCut(hs, cut, len(s))
	}
	var in []hit
	for _, h := range hs {
		if h.end <= cut {
			in = append(in, h)
		}
	}
	w.inBlock = cut == len(s) && !final && openBlock(s)
	return w.pass(render(s[:cut], in), cut)
}

// pass writes out and drops the first n bytes of the buffer.
func (w *Writer) pass(out string, n int) error {
	w.buf = w.buf[n:]
	_, err := io.WriteString(w.w, out)
	return err
}

// cutAt is where a window would end: the carry-over from the end, moved
// back to the end of a line if one ends in the half window before, or
// else to the start of a character.
func (w *Writer) cutAt(s string) int {
	cut := len(s) - w.carry
	if i := strings.LastIndexByte(s[cut-window/2:cut], '\n'); i >= 0 {
		return cut - window/2 + i + 1
	}
	for i := 0; i < utf8.UTFMax && !utf8.RuneStart(s[cut]); i++ {
		cut--
	}
	return cut
}

// safeCut moves cut out of every match that holds it, context included.
// A match that ends before the buffer does is complete: the cut moves to
// its end. One that runs to the buffer's end may go on: the cut moves to
// its start, so it is redacted whole with the next window, unless it
// starts the buffer (a match longer than a window, or a key block without
// its end yet): then all of it is redacted now.
func safeCut(hs []hit, cut, n int) int {
	if len(hs) == 0 {
		return cut
	}
	// The matches' extents, merged where they overlap.
	type span struct{ from, to int }
	var spans []span
	for _, h := range hs {
		spans = append(spans, span{h.from, h.to})
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.from < last.to {
			last.to = max(last.to, sp.to)
			continue
		}
		merged = append(merged, sp)
	}
	for _, sp := range merged {
		if sp.from < cut && cut < sp.to {
			if sp.to < n || sp.from == 0 {
				return sp.to
			}
			return sp.from
		}
	}
	return cut
}

// InKeyBlock reports whether s, a stream's text so far (not redacted),
// ends inside a private key block: its last begin line has no end line
// after it. What follows is key up to the block's end line.
func InKeyBlock(s string) bool { return openBlock(s) }

// RedactAfter redacts s, the text that follows prev in a stream read in
// pieces (prev as it was written, back at least to a key block's begin
// line). When prev ends inside a private key block, s up to the block's
// end line is key: one marker and its line breaks, as a Writer passes on
// a long block's rest; what follows, or all of s otherwise, is redacted
// as Redact does. A reader whose last piece ended after a block's begin
// line so shows no line of its body.
func (r *Redactor) RedactAfter(prev, s string) string {
	if !openBlock(prev) {
		return r.Redact(s)
	}
	end := len(s)
	if m := keyEndRE().FindStringIndex(s); m != nil {
		end = m[1]
	}
	return "[REDACTED:private-key]" + strings.Repeat("\n", strings.Count(s[:end], "\n")) + r.Redact(s[end:])
}

// openBlock reports whether s ends inside a private key block: the last
// begin line has no end line after it.
func openBlock(s string) bool {
	i := strings.LastIndex(s, "-----BEGIN")
	return i >= 0 && strings.Contains(line(s[i:]), "PRIVATE KEY-----") && !strings.Contains(s[i:], "-----END")
}

// line returns s up to its first line break.
func line(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
