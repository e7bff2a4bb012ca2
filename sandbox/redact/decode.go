package redact

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A secret escaped or encoded by the usual means of URLs, JSON, HTML,
// MIME or source code is found by decoding the run of text around the
// escape and looking for secrets in what that gives: percent escapes
// (%67hp_…, a key in a query string), \uXXXX and \xXX, HTML character
// references (&#103;, &#x67;), quoted-printable (=3D, and its soft line
// breaks), and zero-width characters put inside a token. A secret found
// so is replaced where it stands in the text, escapes included.

// decodeHints are where a decoding may start; they share the anchor
// table with the patterns' hints (index len(patterns())). "=" alone is
// too common in code to be one; quoted-printable is found by "=3D" and
// its soft line breaks.
var decodeHints = []string{"%", `\u`, `\x`, "&#", "=3d", "=\n", "=\r\n",
	"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"}

// maxDecodeDepth bounds how often a decoded text is decoded again (a
// doubly percent-encoded key, %2567hp_…).
const maxDecodeDepth = 2

// maxRunSide bounds how far a run reaches on each side of an escape: a
// secret and its context fit in it (see minCarry).
const maxRunSide = minCarry

// decodedHits returns the secrets in the decoded runs around escapes.
func (r *Redactor) decodedHits(s string, triggers []anchor, prompt bool, depth int) []hit {
	if depth >= maxDecodeDepth || len(triggers) == 0 {
		return nil
	}
	slices.SortFunc(triggers, func(a, b anchor) int { return a.at - b.at })
	var hs []hit
	done := 0
	for _, a := range triggers {
		if a.at < done || escapeLen(s, a.at) == 0 {
			continue
		}
		start, end := runAround(s, a.at)
		done = end
		dec, offs := decode(s[start:end])
		if offs == nil {
			continue
		}
		for _, h := range r.hitsDepth(dec, prompt, depth+1) {
			hs = append(hs, hit{start: start + offs[h.start], end: start + offs[h.end], from: start + offs[h.from], to: start + offs[h.to], kind: h.kind})
		}
	}
	return hs
}

// runAround returns the run of text an escape at i belongs to: what is
// not white space around it (quoted-printable's soft line breaks do not
// end it), at most maxRunSide on each side.
func runAround(s string, i int) (int, int) {
	start := i
	for start > 0 && i-start < maxRunSide {
		switch {
		case !isSpace(s[start-1]):
		case s[start-1] == '\n' && start >= 2 && s[start-2] == '=':
			start--
		case s[start-1] == '\n' && start >= 3 && s[start-2] == '\r' && s[start-3] == '=':
			start -= 2
		default:
			return start, runEnd(s, i)
		}
		start--
	}
	return start, runEnd(s, i)
}

func runEnd(s string, i int) int {
	end := i
	for end < len(s) && end-i < maxRunSide {
		switch {
		case !isSpace(s[end]):
			end++
		case end > 0 && s[end-1] == '=' && s[end] == '\n':
			end++
		case end > 0 && s[end-1] == '=' && s[end] == '\r' && end+1 < len(s) && s[end+1] == '\n':
			end += 2
		default:
			return end
		}
	}
	return end
}

// decode undoes the escapes in run. offs[i] is where the byte i of the
// decoded text comes from in run, and offs[len] is len(run); offs is nil
// when run holds no escape.
func decode(run string) (string, []int) {
	var b strings.Builder
	var offs []int
	changed := false
	for i := 0; i < len(run); {
		n, out := escapeAt(run, i)
		if n == 0 {
			b.WriteByte(run[i])
			offs = append(offs, i)
			i++
			continue
		}
		changed = true
		for range len(out) {
			offs = append(offs, i)
		}
		b.WriteString(out)
		i += n
	}
	if !changed {
		return run, nil
	}
	return b.String(), append(offs, len(run))
}

// escapeLen is the length of the escape at s[i:], 0 if none starts there.
func escapeLen(s string, i int) int {
	n, _ := escapeAt(s, i)
	return n
}

// zeroWidth are the invisible characters that can be put inside a token
// without changing how it looks.
var zeroWidth = []string{"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"}

// escapeAt returns the length of the escape at s[i:] and what it stands
// for, or 0 if none starts there.
func escapeAt(s string, i int) (int, string) {
	rest := s[i:]
	switch s[i] {
	case '%':
		if v, ok := hexByte(rest[1:], 2); ok {
			return 3, v
		}
	case '\\':
		if len(rest) >= 6 && (rest[1] == 'u' || rest[1] == 'U') {
			if c, err := strconv.ParseUint(rest[2:6], 16, 32); err == nil {
				return 6, string(rune(c))
			}
		}
		if len(rest) >= 2 && rest[1] == 'x' {
			if v, ok := hexByte(rest[2:], 2); ok {
				return 4, v
			}
		}
	case '&':
		if !strings.HasPrefix(rest, "&#") {
			break
		}
		body, _, ok := strings.Cut(rest[2:min(len(rest), 12)], ";")
		n, base := 2+len(body)+1, 10
		if strings.HasPrefix(body, "x") || strings.HasPrefix(body, "X") {
			body, base = body[1:], 16
		}
		if c, err := strconv.ParseUint(body, base, 32); ok && err == nil && c <= utf8.MaxRune {
			return n, string(rune(c))
		}
	case '=':
		switch {
		case strings.HasPrefix(rest, "=\n"):
			return 2, ""
		case strings.HasPrefix(rest, "=\r\n"):
			return 3, ""
		}
		// Quoted-printable writes its hex digits in upper case.
		if len(rest) >= 3 && upperHex(rest[1]) && upperHex(rest[2]) {
			v, _ := hexByte(rest[1:], 2)
			return 3, v
		}
	default:
		for _, z := range zeroWidth {
			if strings.HasPrefix(rest, z) {
				return len(z), ""
			}
		}
	}
	return 0, ""
}

// hexByte decodes the n (2) hex digits at the start of s.
func hexByte(s string, n int) (string, bool) {
	if len(s) < n {
		return "", false
	}
	v, err := strconv.ParseUint(s[:n], 16, 8)
	if err != nil {
		return "", false
	}
	return string([]byte{byte(v)}), true
}

func upperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }
