package tokens

import (
	"unicode"
	"unicode/utf8"
)

// The tiktoken encodings split a text into pieces with a regular
// expression before byte-pair encoding each piece. The library runs that
// expression with a backtracking engine at a few megabytes a second,
// which made counting a 50 KB read cost ten milliseconds. split does the
// same split by hand, following the expression's alternatives in order
// with their backtracking worked out below; split_test.go checks it
// against the library's expression on real and random text.
//
// o200k_base:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// cl100k_base:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// \s is unicode.IsSpace, as in the library's engine. split needs valid
// UTF-8: the engine reads invalid bytes as U+FFFD, which changes the
// pieces' bytes, so the caller counts such text with the library.

// splitter splits text the way one encoding's expression does.
type splitter struct {
	o200k bool
}

// split calls piece for each piece of s, in order; the pieces cover s.
func (sp splitter) split(s string, piece func(string)) {
	for i := 0; i < len(s); {
		n := sp.next(s, i)
		piece(s[i : i+n])
		i += n
	}
}

// next returns the length of the piece at s[i:], which is not empty.
func (sp splitter) next(s string, i int) int {
	if sp.o200k {
		if n := o200kWord(s, i); n > 0 {
			return n
		}
	} else {
		if n := contraction(s, i); n > 0 {
			return n
		}
		if n := cl100kWord(s, i); n > 0 {
			return n
		}
	}
	if n := digits(s, i); n > 0 {
		return n
	}
	if n := punct(s, i, sp.o200k); n > 0 {
		return n
	}
	return spaces(s, i)
}

func decode(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// The character classes of the expressions, as bits.
const (
	cSpace  = 1 << iota // \s
	cL                  // \p{L}
	cN                  // \p{N}
	cUpper              // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower              // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cPunct              // [^\s\p{L}\p{N}]
	cPrefix             // [^\r\n\p{L}\p{N}]
	cBreak              // [\r\n]
)

// ascii holds the classes of the ASCII characters, most of what is
// counted; the Unicode tables serve the rest.
var ascii = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = classify(r)
	}
	return t
}()

func classOf(r rune) uint8 {
	if r < 0 {
		return 0
	}
	if r < utf8.RuneSelf {
		return ascii[r]
	}
	return classify(r)
}

func classify(r rune) uint8 {
	var c uint8
	switch {
	case unicode.IsSpace(r):
		c |= cSpace
	case unicode.IsLetter(r):
		c |= cL
	case unicode.IsNumber(r):
		c |= cN
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cUpper
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cLower
	}
	if c&(cSpace|cL|cN) == 0 {
		c |= cPunct
	}
	if r == '\r' || r == '\n' {
		c |= cBreak
	} else if c&(cL|cN) == 0 {
		c |= cPrefix
	}
	return c
}

// run returns the byte length of the longest run of characters of a
// class in mask from s[i:].
func run(s string, i int, mask uint8) int {
	j := i
	for j < len(s) {
		if b := s[j]; b < utf8.RuneSelf {
			if ascii[b]&mask == 0 {
				break
			}
			j++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[j:])
		if classify(r)&mask == 0 {
			break
		}
		j += n
	}
	return j - i
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i:].
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' {
		return 0
	}
	r1, n1 := decode(s, i+1)
	switch fold(r1) {
	case 's', 't', 'm', 'd':
		return 1 + n1
	case 'r', 'v', 'l':
		want := 'e'
		if fold(r1) == 'l' {
			want = 'l'
		}
		if r2, n2 := decode(s, i+1+n1); n2 > 0 && fold(r2) == want {
			return 1 + n1 + n2
		}
	}
	return 0
}

// fold is how the engine compares a character under (?i): any character
// of a letter's case-folding orbit matches it (ſ is s, the Kelvin sign k).
func fold(r rune) rune {
	if r < 0 {
		return r
	}
	if r < utf8.RuneSelf {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	// The orbit's ASCII lower-case letter, if it has one.
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= 'a' && f <= 'z' {
			return f
		}
	}
	return r
}

// o200kWord matches the first two alternatives of o200k_base. Both take
// the prefix character when they can and give it back only when the rest
// fails. In the first, the greedy upper-case run gives back characters
// until the lower-case run can start: at the run's end if a lower-case
// letter follows, else at its last character that is in both classes.
func o200kWord(s string, i int) int {
	// The common case first: an ASCII lower-case word, alone or after one
	// prefix character. Its upper-case run is empty, so the first
	// alternative takes the lower-case run.
	if b := s[i]; b >= 'a' && b <= 'z' {
		end := i + run(s, i, cLower)
		return end - i + contraction(s, end)
	} else if b < utf8.RuneSelf && ascii[b]&cPrefix != 0 && i+1 < len(s) && s[i+1] >= 'a' && s[i+1] <= 'z' {
		end := i + 1 + run(s, i+1, cLower)
		return end - i + contraction(s, end)
	}
	r, n := decode(s, i)
	starts := [2]int{i, i}
	if classOf(r)&cPrefix != 0 {
		starts[0] = i + n
	}
	for _, p := range starts {
		u := run(s, p, cUpper)
		k := -1
		if r, _ := decode(s, p+u); classOf(r)&cLower != 0 {
			k = p + u
		} else {
			for j := p; j < p+u; {
				r, n := decode(s, j)
				if classOf(r)&cLower != 0 {
					k = j
				}
				j += n
			}
		}
		if k >= 0 {
			end := k + run(s, k, cLower)
			return end - i + contraction(s, end)
		}
	}
	for _, p := range starts {
		if u := run(s, p, cUpper); u > 0 {
			end := p + u + run(s, p+u, cLower)
			return end - i + contraction(s, end)
		}
	}
	return 0
}

// cl100kWord matches [^\r\n\p{L}\p{N}]?\p{L}+.
func cl100kWord(s string, i int) int {
	r, n := decode(s, i)
	if classOf(r)&cPrefix != 0 {
		if l := run(s, i+n, cL); l > 0 {
			return n + l
		}
	}
	return run(s, i, cL)
}

// digits matches \p{N}{1,3}.
func digits(s string, i int) int {
	j := i
	for range 3 {
		r, n := decode(s, j)
		if n == 0 || classOf(r)&cN == 0 {
			break
		}
		j += n
	}
	return j - i
}

// punct matches ' ?[^\s\p{L}\p{N}]+' followed by [\r\n/]* (o200k_base) or
// [\r\n]* (cl100k_base).
func punct(s string, i int, o200k bool) int {
	p := i
	if s[i] == ' ' {
		p++
	}
	// Without the space the match fails too: a space is not punctuation.
	if r, _ := decode(s, p); classOf(r)&cPunct == 0 {
		return 0
	}
	end := p + run(s, p, cPunct)
	for end < len(s) && (s[end] == '\r' || s[end] == '\n' || o200k && s[end] == '/') {
		end++
	}
	return end - i
}

// spaces matches the last three alternatives at a space. The library's
// engine runs \s*[\r\n]+ as if its \s* could not hold a line break
// (standalone it backtracks as expected; inside the whole expression it
// does not), so that alternative takes the spaces before the first line
// breaks and those breaks: "\n\t\n" is two pieces. Else the run but its
// last character when a non-space follows (that character leads the next
// piece); else the run.
func spaces(s string, i int) int {
	w := run(s, i, cSpace)
	if w == 0 {
		// Every character is a letter, a number, punctuation or a space,
		// and the alternatives above took the first three.
		_, n := decode(s, i)
		return n
	}
	lead := runSpaceNoBreak(s, i)
	if breaks := run(s, i+lead, cBreak); breaks > 0 {
		return lead + breaks
	}
	if i+w == len(s) {
		return w
	}
	// The run's last character, whatever its width.
	_, last := utf8.DecodeLastRuneInString(s[i : i+w])
	if w > last {
		return w - last
	}
	return w
}

// runSpaceNoBreak is the run of spaces from s[i:] up to a line break.
func runSpaceNoBreak(s string, i int) int {
	j := i
	for j < len(s) {
		r, n := decode(s, j)
		if classOf(r)&(cSpace|cBreak) != cSpace {
			break
		}
		j += n
	}
	return j - i
}
