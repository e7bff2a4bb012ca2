// Package display makes text that came from the model, a tool or the
// repository safe to show in an editor or a terminal: nothing in it may
// move the cursor, set the terminal's title or clipboard (OSC), ring,
// erase what is shown, or reverse the order in which text reads.
//
// Two shapes: a Label is one line (a title, a permission option, a plan
// step), a Text is a body (a message, a tool's output) that keeps its
// lines and tabs. Both drop the C0 and C1 control characters, DEL and the
// bidirectional overrides and isolates. An escape sequence that only
// styles text (CSI: colours, cursor moves) is removed whole; any other
// (OSC, DCS, …) loses its ESC and its terminator, and what it carried
// stays visible: what the model reads, the user can read too.
package display

import (
	"strings"
	"unicode/utf8"
)

// Label returns s as one line safe to show: line and paragraph breaks
// and tabs become spaces, the ends are trimmed, the rest is as Text.
func Label(s string) string {
	if clean(s, false) {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(filter(s, false))
}

// Text returns s safe to show as a body of text: newlines and tabs stay,
// a carriage return ends a line (CRLF is one newline; a lone CR, which a
// terminal would use to write over what the line showed, is a newline).
func Text(s string) string {
	if clean(s, true) {
		return s
	}
	return filter(s, true)
}

// clean reports whether s needs no change: the common case, checked
// without allocating (every streamed fragment of an answer passes here).
func clean(s string, body bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if c < 0x20 && !(body && (c == '\n' || c == '\t')) || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || drop(r, body) || breaks(r) {
			return false
		}
		i += n
	}
	return true
}

// filter rewrites s; body says whether it is a Text (lines kept).
func filter(s string, body bool) string {
	var b strings.Builder
	b.Grow(len(s))
	space := func() {
		if body {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n' || c == '\t':
			if body {
				b.WriteByte(c)
			} else {
				b.WriteByte(' ')
			}
			i++
		case c == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++ // CRLF: the newline is written next
				continue
			}
			space()
			i++
		case c == 0x1b:
			i += escape(s[i:])
		case c < 0x20 || c == 0x7f:
			i++ // BEL, NUL, backspace, …
		case c < 0x80:
			b.WriteByte(c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			i += n
			switch {
			case r == utf8.RuneError:
				b.WriteRune(utf8.RuneError)
			case breaks(r):
				space()
			case !drop(r, body):
				b.WriteString(s[i-n : i])
			}
		}
	}
	return b.String()
}

// escape returns how many bytes of s (which starts with ESC) to skip: a
// whole CSI sequence; for any other escape, the ESC and the byte that
// says what it is, so that a string it carries (an OSC's title) shows
// as text. Its terminator (BEL, or ESC \) is dropped as a control.
func escape(s string) int {
	if len(s) < 2 {
		return 1
	}
	if s[1] != '[' {
		if s[1] < 0x20 || s[1] >= 0x7f {
			return 1 // ESC before a control or a non-ASCII rune: only the ESC goes
		}
		return 2
	}
	// CSI: parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F, one
	// final byte 0x40–0x7E. Nothing of it is text.
	i := 2
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		return i + 1
	}
	return i // cut short or malformed: what followed shows
}

// drop reports whether the rune r (not ASCII) is removed: C1 controls,
// the bidirectional overrides and isolates, and, in a label, the
// direction marks too (a label has no use for them).
func drop(r rune, body bool) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1, NEL aside (breaks)
		return r != 0x85
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	case r == 0x200e || r == 0x200f || r == 0x061c: // LRM, RLM, ALM
		return !body
	}
	return false
}

// breaks reports whether r ends a line: NEL, LINE and PARAGRAPH
// SEPARATOR.
func breaks(r rune) bool { return r == 0x85 || r == 0x2028 || r == 0x2029 }
