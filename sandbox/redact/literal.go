package redact

import (
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"sync/atomic"
)

// A known value (an environment variable's, a .env file's) is found in
// the forms a command or a model can give it without meaning to hide it:
// as it is in any case (echo "${KEY^^}"), reversed, hex-encoded (xxd -p)
// and base64-encoded (base64, HTTP basic auth), at each of the three
// alignments base64 can give it inside a longer text. Percent, JSON and
// HTML escapes and zero-width characters are undone before matching
// instead (decode.go). A long value is also found cut in two: a prefix or
// a suffix of it, as long as half the value, on its own (see piece).
const (
	// pieceValue is the least length of a value whose pieces count.
	pieceValue = 16
	// seedLen is how much of a form's start (and of a value's end) the
	// anchor table looks for; the rest is compared where it is found.
	seedLen = 8
	// maxSeeds bounds the seeds in a redactor's table (its states are
	// 16-bit); forms past it are found with strings.Index, whole only.
	maxSeeds = 3000
)

// literal is one form of a known value.
type literal struct {
	value, kind string
	// fold says the form matches in any case: a value, its reversal and
	// its hex form. Base64 is matched exactly.
	fold bool
	// pieces says a prefix or a suffix of the form counts on its own (the
	// value itself, when long enough).
	pieces bool
	// bytes are the bytes of a form with pieces, in both cases: a text
	// with another byte is no piece of it.
	bytes byteSet
}

// byteSet is a set of bytes.
type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *byteSet) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }

// forms returns the literals that find value: the value, then its encoded
// forms.
func forms(value, kind string) []literal {
	out := []literal{{value: value, kind: kind, fold: true, pieces: len(value) >= pieceValue}}
	for i := range len(value) {
		out[0].bytes.add(lowerByte(value[i]))
		out[0].bytes.add(upperByte(value[i]))
	}
	add := func(v string, fold bool) {
		if len(v) >= minSecretLen && !slices.ContainsFunc(out, func(l literal) bool { return l.value == v }) {
			out = append(out, literal{value: v, kind: kind, fold: fold})
		}
	}
	b := []byte(value)
	rev := []rune(value)
	slices.Reverse(rev)
	add(string(rev), true)
	add(hex.EncodeToString(b), true)
	for k := range 3 {
		// The value after k other bytes: only the characters whose six
		// bits are all the value's are the same whatever those bytes are.
		buf := append(make([]byte, k), b...)
		from, to := (8*k+5)/6, 8*(k+len(b))/6
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			add(enc.EncodeToString(buf)[from:to], false)
		}
	}
	return out
}

// literalTable is a redactor's anchor table: the patterns' hints and a
// seed of each of its literals, found in one pass.
type literalTable struct {
	anchors *anchorTable
	// seeds[j] is what anchor list len(patterns)+1+j of a scan stands
	// for (after the patterns' hints and decodeHints).
	seeds []seed
	// rest are the literals that got no seed (past maxSeeds).
	rest []int
}

// seed is where a literal can be found from: its start, or its end (for a
// suffix piece).
type seed struct {
	literal int
	end     bool
}

// table returns the anchor table for r, built on first use after its
// literals changed.
func (r *Redactor) table() *literalTable {
	if r == nil {
		return &literalTable{anchors: anchors()}
	}
	if t := r.tab.Load(); t != nil {
		return t
	}
	hints := append(patternHints(patterns()), decodeHints)
	t := &literalTable{}
	for i, l := range r.literals {
		if len(t.seeds) >= maxSeeds {
			t.rest = append(t.rest, i)
			continue
		}
		hints = append(hints, []string{l.value[:seedLen]})
		t.seeds = append(t.seeds, seed{literal: i})
		if l.pieces {
			hints = append(hints, []string{l.value[len(l.value)-seedLen:]})
			t.seeds = append(t.seeds, seed{literal: i, end: true})
		}
	}
	t.anchors = newAnchorTable(hints)
	r.tab.CompareAndSwap(nil, t)
	return t
}

// tableRef holds a redactor's table; adding a value drops it.
type tableRef = atomic.Pointer[literalTable]

// literalHits finds r's literals in s from the seeds the scan found: each
// form whole, and a value's prefix or suffix on its own (piece).
func (r *Redactor) literalHits(s string, t *literalTable, found [][]anchor) []hit {
	var hs []hit
	for j, as := range found {
		sd := t.seeds[j]
		l := r.literals[sd.literal]
		for _, a := range as {
			if sd.end {
				end := a.at + seedLen
				n := commonSuffix(s[:end], l.value, l.fold)
				if n < len(l.value) && piece(s, end-n, end, len(l.value), false) {
					hs = append(hs, hit{start: end - n, end: end, from: end - n, to: end, kind: l.kind})
				}
				continue
			}
			n := commonPrefix(s[a.at:], l.value, l.fold)
			if n == len(l.value) || l.pieces && piece(s, a.at, a.at+n, len(l.value), true) {
				hs = append(hs, hit{start: a.at, end: a.at + n, from: a.at, to: a.at + n, kind: l.kind})
			}
		}
	}
	for _, i := range t.rest {
		l := r.literals[i]
		for off := 0; ; {
			k := indexFold(s[off:], l.value, l.fold)
			if k < 0 {
				break
			}
			k += off
			off = k + len(l.value)
			hs = append(hs, hit{start: k, end: off, from: k, to: off, kind: l.kind})
		}
	}
	return hs
}

// piece reports whether s[start:end], a prefix (or suffix) of a value of
// length n but not all of it, stands for the value: it is at least half
// the value, and it starts (a prefix) where a word does, as a value cut
// in two does ("${KEY:0:12}", a line cut by a cap or a line break), or
// (a suffix) is a word of its own, ending and starting where words do
// (the second half of a line cut in two). Shorter pieces, and pieces
// inside a longer word, are left: there they are as likely ordinary
// text. A suffix glued to the end of a word is left too: otherwise the
// last letters of any word could be the start of one, and a Chat would
// hold them back until the next piece of the answer came.
func piece(s string, start, end, n int, prefix bool) bool {
	if end-start < max(seedLen, n/2) {
		return false
	}
	if prefix {
		return wordEdge(s, start)
	}
	return wordEdge(s, start) && wordEdge(s, end)
}

// wordEdge reports whether a word starts or ends at i in s: a letter or
// digit is not on both sides of it.
func wordEdge(s string, i int) bool {
	return i == 0 || i == len(s) || !isAlnum(s[i-1]) || !isAlnum(s[i])
}

// commonPrefix is how many bytes s and v share from their starts.
func commonPrefix(s, v string, fold bool) int {
	n := min(len(s), len(v))
	for i := range n {
		if !sameByte(s[i], v[i], fold) {
			return i
		}
	}
	return n
}

// commonSuffix is how many bytes s and v share at their ends.
func commonSuffix(s, v string, fold bool) int {
	n := min(len(s), len(v))
	for i := 1; i <= n; i++ {
		if !sameByte(s[len(s)-i], v[len(v)-i], fold) {
			return i - 1
		}
	}
	return n
}

func sameByte(a, b byte, fold bool) bool {
	return a == b || fold && lowerByte(a) == lowerByte(b)
}

// indexFold is strings.Index, ignoring ASCII case when fold is set.
func indexFold(s, v string, fold bool) int {
	if !fold {
		return strings.Index(s, v)
	}
	for i := 0; i+len(v) <= len(s); i++ {
		if sameByte(s[i], v[0], true) && commonPrefix(s[i:], v, true) == len(v) {
			return i
		}
	}
	return -1
}
