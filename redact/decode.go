package redact

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A secret escaped or encoded by the usual means of URLs, JSON, HTML,
// MIME or source code is found by decoding the text and looking for
// secrets in what that gives: percent escapes (%67hp_…, a key in a query
// string), \uXXXX and \xXX, HTML character references (&#103;, &#x67;),
// quoted-printable (=3D, and its soft line breaks), and zero-width
// characters put inside a token. A secret found so is replaced where it
// stands in the text, escapes included. Only the secrets that an escape
// is part of, or next to (it makes them start or end where they do),
// are taken from the decoded text, and only those no longer than
// maxDecoded as written: the others are found in the text as it is.
// What a decoded byte is depends only on the few bytes of its escape, and
// what is taken only on the text around it, so a Chat, which decodes the
// end of what it passed on, finds what Redact of the whole answer finds
// there, and only the text near an escape need be decoded
// (escapeRegions).

// decodeHints are where a decoding may start; they share the anchor
// table with the patterns' hints (index len(patterns())). "=" alone is
// too common in code to be one; quoted-printable is found by "=3D" and
// its soft line breaks.
var decodeHints = []string{"%", `\u`, `\x`, "&#", "=3d", "=\n", "=\r\n",
	"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"}

// maxDecoded bounds a secret found decoded, as it is written (escapes
// and all): a pattern's bound is in decoded bytes, and an escape is up to
// 12 bytes long, so a match of the longest patterns (a JWT, a bearer
// token) may reach further than a Chat holds. A longer one is not taken.
// A token written with an escape for each of its characters fits.
const maxDecoded = 4096

// maxDecodeDepth bounds how often a decoded text is decoded again (a
// doubly percent-encoded key, %2567hp_…).
const maxDecodeDepth = 2

// decoding maps a decoded text to the text it came from: byte i of it
// comes from byte decoding[i], and decoding[len] is the text's length.
type decoding []int

// escaped reports whether a match from from to to in a decoded text is
// one to take: an escape is in it or next to it (what makes it start or
// end where it does: its bytes and those on each side came from more
// bytes than they are, as every escape is longer than what it stands
// for), and it is no longer than maxDecoded as written.
func (d decoding) escaped(from, to int) bool {
	lo, hi := max(from-1, 0), min(to+1, len(d)-1)
	return d[hi]-d[lo] != hi-lo && d[to]-d[from] <= maxDecoded
}

// escapes returns where, in the decoded text, an escape is, in order: a
// byte that came from one, or the first after one that decoded to none.
func (d decoding) escapes() []int {
	var out []int
	for k := 0; k+1 < len(d); k++ {
		if d[k+1]-d[k] != 1 {
			out = append(out, k)
		}
	}
	return out
}

// at returns where byte i of the text decoded to d is in the decoded
// text: the first decoded byte that comes from i or after (its end, if
// none does).
func (d decoding) at(i int) int {
	k, _ := slices.BinarySearch(d, i)
	return min(k, len(d)-1)
}

// decodedHits returns the secrets decoding s shows (sc is its scan, and
// known the known values found in it).
func (r *Redactor) decodedHits(s string, triggers []anchor, sc scanned, known []hit, prompt bool, depth int) []hit {
	if depth >= maxDecodeDepth {
		return nil
	}
	var hs []hit
	for _, reg := range escapeRegions(s, triggers) {
		dec, ds := r.decoded(s, sc, known, reg[0], reg[1])
		for _, h := range r.stagedHits(dec, ds, prompt, depth+1) {
			offs := ds.dec
			hs = append(hs, hit{start: offs[h.start], end: offs[h.end], from: offs[h.from], to: offs[h.to], kind: h.kind, stage: decodedStage, inner: h.stage})
		}
	}
	return hs
}

// regionReach is how far around an escape the text is decoded: past the
// longest secret taken decoded (maxDecoded, which must have the escape in
// it or next to it) and what a pattern looks at before its match (a
// name of 128 characters, each written with up to 12 bytes).
const regionReach = maxDecoded + 2*1024

// escapeRegions returns the stretches of s decoded: regionReach on each
// side of every escape, joined where they meet. What is found decoded is
// what decoding the whole of s would find (nothing away from an escape
// is taken), at the cost of decoding only around the escapes.
func escapeRegions(s string, triggers []anchor) [][2]int {
	sortAnchors(triggers)
	var out [][2]int
	for _, a := range triggers {
		if escapeLen(s, a.at) == 0 {
			continue
		}
		from, to := max(0, a.at-regionReach), min(len(s), a.at+regionReach)
		if n := len(out); n > 0 && from <= out[n-1][1] {
			out[n-1][1] = to
			continue
		}
		out = append(out, [2]int{from, to})
	}
	return out
}

// decoded decodes s[from:to], s scanned as sc, and scans the decoded
// text. The known values found in s (known) and before (sc.prior) are
// masked in it as the known values it shows are, and what was found
// decoded before (a Chat's context) as it was.
func (r *Redactor) decoded(s string, sc scanned, known []hit, from, to int) (string, scanned) {
	r.meter().add(to - from)
	dec, offs := decode(s[from:to])
	for i := range offs {
		offs[i] += from
	}
	ds := r.scan(dec)
	d := decoding(offs)
	ds.dec, ds.fixed, ds.escapes = d, d.at(sc.fixed), d.escapes()
	in := func(h hit, stage int) hit {
		return hit{start: d.at(h.start), end: d.at(h.end), from: d.at(h.from), to: d.at(h.to), kind: h.kind, stage: stage}
	}
	for _, h := range slices.Concat(known, stageOf(sc.prior, literalStage)) {
		if h.end > from && h.start < to {
			ds.prior = append(ds.prior, in(h, literalStage))
		}
	}
	for _, h := range stageOf(sc.prior, decodedStage) {
		if h.end > from && h.start < to {
			ds.prior = append(ds.prior, in(h, h.inner))
		}
	}
	return dec, ds
}

// decode undoes the escapes in s. offs[i] is where the byte i of the
// decoded text comes from in s, and offs[len] is len(s).
func decode(s string) (string, []int) {
	var b strings.Builder
	b.Grow(len(s))
	offs := make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		// Copy up to where an escape may start.
		j := i
		for j < len(s) && !escapeStarts[s[j]] {
			j++
		}
		b.WriteString(s[i:j])
		for k := i; k < j; k++ {
			offs = append(offs, k)
		}
		if i = j; i == len(s) {
			break
		}
		n, out := escapeAt(s, i)
		if n == 0 {
			b.WriteByte(s[i])
			offs = append(offs, i)
			i++
			continue
		}
		for range len(out) {
			offs = append(offs, i)
		}
		b.WriteString(out)
		i += n
	}
	return b.String(), append(offs, len(s))
}

// escapeStarts are the bytes an escape starts with (escapeAt): its
// first, or a zero-width character's.
var escapeStarts = func() (t [256]bool) {
	for _, c := range []byte(`%\&=`) {
		t[c] = true
	}
	for _, z := range zeroWidth {
		t[z[0]] = true
	}
	return t
}()

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
		// Of quoted-printable's escapes, only "=3D" (an "=") is undone:
		// "=41" is as likely code (x=41), and decoding it only where
		// another escape says the text is quoted-printable would make
		// what a byte decodes to depend on text far from it.
		if strings.HasPrefix(rest, "=3D") {
			return 3, "="
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

// hexByte decodes the n (2) hex digits at the start of s. It is asked at
// every "%" and "\x" of a text, most of which escape nothing: it must not
// cost an error value each time.
func hexByte(s string, n int) (string, bool) {
	if len(s) < n {
		return "", false
	}
	v := 0
	for i := range n {
		d := hexDigit(s[i])
		if d < 0 {
			return "", false
		}
		v = v<<4 | d
	}
	return string([]byte{byte(v)}), true
}

// hexDigit is the value of the hex digit c, or -1.
func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
