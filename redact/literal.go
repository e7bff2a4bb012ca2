package redact

import (
	"encoding/base64"
	"encoding/hex"
	"slices"
	"sync/atomic"
)

// A known value (an environment variable's, a .env file's) is found as
// it is, wherever it stands, as before any of what follows. A value that
// looks random (randomLooking: a secret, not a word, a host or a number)
// is also found in the forms a command or a model can give it without
// meaning to hide it: in any case (echo "${KEY^^}") and reversed, each as
// a word of its own; hex-encoded (xxd -p; in upper case as a word of its
// own); and base64-encoded (base64, HTTP basic auth), at each of the three
// alignments base64 can give it inside a longer text. Percent, JSON and
// HTML escapes and zero-width characters are undone before matching
// instead (decode.go), for every value. A random-looking value is also
// found cut in two: a prefix or a suffix of it, as long as half the value,
// on its own (see piece). Ordinary values (database, postgres,
// http://localhost:3000, true, 8080) get none of this: in any case, in
// pieces or reversed they are everyday words (Database\Seeders,
// PostgreSQL, http://localhost:8080), and redacting those corrupts what
// the model reads and edits.
const (
	// pieceValue is the least length of a value whose pieces count.
	pieceValue = 16
	// seedLen is how much of a form's start (and of a value's end) the
	// anchor table looks for; the rest is compared where it is found.
	seedLen = 8
	// maxSeeds bounds the seeds in a redactor's table (its states are
	// 16-bit); forms past it are found by comparing them at every byte
	// that starts them, whole only.
	maxSeeds = 3000
	// maxFormLen bounds the values whose other forms and pieces are
	// looked for: secrets are tokens, keys and passwords, not pages.
	maxFormLen = 512
	// longPrefix is how much of a form's start counts as the form,
	// wherever it stands: a value longer than a Chat holds must be known
	// for one before it has all come.
	longPrefix = 4096
)

// randomLooking reports whether v looks like a secret rather than an
// ordinary value: one of its words (a run of ASCII letters and digits) is
// at least 8 long and goes from letters to digits or back at least twice
// (Hx7Pq2Zr9, hunter2hunter2, 550e8400). Words, hosts, URLs without
// credentials, numbers, versions (database, localhost, 127.0.0.1,
// http://localhost:3000, utf8mb4_unicode_ci, us-east-1) do not.
func randomLooking(v string) bool {
	run, changes := 0, 0
	for i := 0; i <= len(v); i++ {
		if i == len(v) || !isAlnum(v[i]) {
			if run >= 8 && changes >= 2 {
				return true
			}
			run, changes = 0, 0
			continue
		}
		if run > 0 && isDigit(v[i]) != isDigit(v[i-1]) {
			changes++
		}
		run++
	}
	return false
}

// literal is one form of a known value.
type literal struct {
	value, kind string
	// fold says the form matches in any case, and word that it counts
	// only as a word of its own (a letter or digit is on neither side).
	fold, word bool
	// pieces says a prefix or a suffix of the form counts on its own (the
	// value itself, when it looks random and is long enough).
	pieces bool
	// bytes are the bytes of a form with pieces: a text with another byte
	// is no piece of it.
	bytes byteSet
	// z and zr are the Z arrays of the value and of its reversal (for
	// its suffixes, with pieces), and rev its bytes but the last
	// reversed (pieceComing).
	z, zr []int32
	rev   string
}

// byteSet is a set of bytes.
type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *byteSet) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }

// forms returns the literals that find value: the value, then, if it
// looks random, its other forms.
func forms(value, kind string) []literal {
	out := []literal{{value: value, kind: kind}}
	if randomLooking(value) && len(value) <= maxFormLen {
		out[0].pieces = len(value) >= pieceValue
		add := func(v string, fold, word bool) {
			if len(v) >= minSecretLen && !slices.ContainsFunc(out, func(l literal) bool { return l.value == v && l.fold == fold && l.word == word }) {
				out = append(out, literal{value: v, kind: kind, fold: fold, word: word})
			}
		}
		b := []byte(value)
		rev := []rune(value)
		slices.Reverse(rev)
		add(value, true, true)
		add(string(rev), true, true)
		add(hex.EncodeToString(b), false, false)
		add(hex.EncodeToString(b), true, true)
		for k := range 3 {
			// The value after k other bytes: only the characters whose six
			// bits are all the value's are the same whatever those bytes are.
			buf := append(make([]byte, k), b...)
			from, to := (8*k+5)/6, 8*(k+len(b))/6
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				add(enc.EncodeToString(buf)[from:to], false, false)
			}
		}
	}
	for i := range out {
		l := &out[i]
		l.z = zArray(l.value, l.fold)
		if l.pieces {
			for j := range len(l.value) {
				l.bytes.add(l.value[j])
			}
			l.zr = zArray(reverseBytes(l.value), l.fold)
			l.rev = reverseBytes(l.value[:len(l.value)-1])
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

// prefixes returns, for each anchor (in order) where l's seed was found
// in s, how much of l the text from there starts with.
func (l *literal) prefixes(s string, as []anchor, w *meter) []int {
	return prefixLens(s, l.value, l.z, l.fold, len(as), func(k int) int { return as[k].at }, w)
}

// matches reports whether s[at:at+n], the start of s from at that l
// starts with, stands for l: all of it, or longPrefix of it, or a piece,
// each as a word of its own if l wants one.
func (l *literal) matches(s string, at, n int) bool {
	switch {
	case n == len(l.value):
		return !l.word || wordEdge(s, at) && wordEdge(s, at+n)
	case n >= longPrefix:
		return !l.word || wordEdge(s, at)
	}
	return l.pieces && piece(s, at, at+n, len(l.value), true)
}

// literalHits finds r's literals in s from the seeds the scan found: each
// form whole, and a value's prefix or suffix on its own (piece).
func (r *Redactor) literalHits(s string, t *literalTable, found [][]anchor, w *meter) []hit {
	var hs []hit
	for j, as := range found {
		if len(as) == 0 {
			continue
		}
		sd := t.seeds[j]
		l := &r.literals[sd.literal]
		if sd.end {
			ns := suffixLens(s, l.value, l.zr, l.fold, len(as), func(k int) int { return as[k].at + seedLen }, w)
			for k, a := range as {
				end, n := a.at+seedLen, ns[k]
				if n < len(l.value) && piece(s, end-n, end, len(l.value), false) {
					hs = append(hs, hit{start: end - n, end: end, from: end - n, to: end, kind: l.kind})
				}
			}
			continue
		}
		for k, n := range l.prefixes(s, as, w) {
			if at := as[k].at; l.matches(s, at, n) {
				hs = append(hs, l.hit(s, at, n))
			}
		}
	}
	for _, i := range t.rest {
		l := &r.literals[i]
		var at []int
		for k := range len(s) {
			if sameByte(s[k], l.value[0], l.fold) {
				at = append(at, k)
			}
		}
		w.add(len(s))
		for k, n := range prefixLens(s, l.value, l.z, l.fold, len(at), func(k int) int { return at[k] }, w) {
			if n == len(l.value) && l.matches(s, at[k], n) {
				hs = append(hs, l.hit(s, at[k], n))
			}
		}
	}
	return hs
}

// hit is the hit of l found at at, n long. One that runs to the end of s
// before l does may go on as l.
func (l *literal) hit(s string, at, n int) hit {
	h := hit{start: at, end: at + n, from: at, to: at + n, kind: l.kind}
	if at+n == len(s) && n < len(l.value) {
		h.tails = []tail{{value: l.value, fold: l.fold, off: n}}
	}
	return h
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
