package tokens

import (
	"unicode"
	"unicode/utf8"
)

// Estimate approximates a byte-pair encoding without a vocabulary. It
// splits text the way tiktoken's pre-tokenizer does (words with their
// leading space or mark, digit groups, punctuation runs, whitespace runs)
// and charges each piece what a BPE vocabulary of 100–200k entries
// usually spends on it. On this repository's Go, Markdown and JSON it is
// within 1 % of o200k_base in total and 12 % on the worst file (see
// TestEstimateTracksO200k); the context window corrects the rest per
// session from the usage the provider reports.
type Estimate struct{}

func (Estimate) Exact() bool  { return false }
func (Estimate) Name() string { return "estimate" }

// Count implements Counter.
func (Estimate) Count(s string) int {
	n := 0.0
	for i := 0; i < len(s); {
		r, _ := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || r == '\r':
			j := i
			for j < len(s) && (s[j] == '\n' || s[j] == '\r') {
				j++
			}
			n++
			i = j
		case r == ' ' || r == '\t':
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			// A single space joins the next word; indentation is a token.
			if j-i > 1 || j == len(s) || s[j] == '\n' {
				n++
			}
			i = j
		case isLetter(r):
			j, letters, upper := i, 0, 0
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if !isLetter(r) {
					break
				}
				if r >= 0x2E80 { // CJK and beyond: about a token a character
					n += 1
				} else {
					letters++
					if unicode.IsUpper(r) && j > i {
						upper++
					}
				}
				j += size
			}
			n += wordCost(letters, upper)
			i = j
		case r >= '0' && r <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			n += float64((j - i + 2) / 3)
			i = j
		default:
			j, k := i, 0
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if r == ' ' || r == '\t' || r == '\n' || r == '\r' || isLetter(r) || (r >= '0' && r <= '9') {
					break
				}
				if r >= 0x80 {
					k += 2 // symbols outside ASCII are often split into bytes
				} else {
					k++
				}
				j += size
			}
			if j < len(s) && isLetter(rune(s[j])) {
				k-- // one mark joins the word after it: ".Lock", "(ctx"
			}
			n += float64((k + 2) / 3)
			i = j
		}
	}
	return int(n + 0.5)
}

func isLetter(r rune) bool {
	if r < 0x80 {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
	}
	return unicode.IsLetter(r)
}

// wordCost is what a run of letters costs: short and common words are
// one token, longer ones about one per five letters, and each inner
// capital (camelCase) usually starts a new token.
func wordCost(letters, innerUpper int) float64 {
	if letters == 0 {
		return 0
	}
	c := 1.0
	if letters > wordLetters {
		c += float64(letters-wordLetters) / extraLetters
	}
	c += float64(innerUpper) * upperCost
	return c
}

// Calibrated on Go sources, Markdown and JSON against o200k_base.
const (
	wordLetters  = 7
	extraLetters = 6.0
	upperCost    = 0.3
)
