package redact

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"
)

// A Chat must know whether the end of a text could still become a match
// of a pattern once more text comes. That is a question about the
// beginnings of the texts a pattern matches, which form a regular
// language of their own: prefixOf builds its expression from the
// pattern's, so the two cannot disagree.

// opening is what a Chat knows of a pattern (openings, indexed like
// patterns()).
type opening struct {
	// begun matches a whole text that begins a match (all of it, up to
	// the text's end): the match may still come, or go on.
	begun *regexp.Regexp
	// head matches, from a contextual pattern's match start, what comes
	// before the value it replaces (the name and "=", "Bearer "), and
	// value a text that begins the value and the rest of the match; nil
	// when the whole match is replaced.
	head, value *regexp.Regexp
	// word says a match starts with \b, wordEnd that it ends with one.
	word, wordEnd bool
	// window is the pattern's: no match is longer. headMax bounds the
	// head (-1: no bound).
	window, headMax int
}

var openings = sync.OnceValue(func() []opening {
	ps := patterns()
	out := make([]opening, len(ps))
	for k, p := range ps {
		re, err := syntax.Parse(p.re.String(), syntax.Perl)
		if err != nil {
			panic("redact: " + p.kind + ": " + err.Error())
		}
		o := opening{begun: regexp.MustCompile(`^(?:` + prefixOf(re).String() + `)\z`), word: startsWord(re), wordEnd: endsWithWord(re), window: p.window}
		if p.group > 0 {
			i := groupAt(re, p.group)
			if i < 0 {
				panic("redact: " + p.kind + ": the replaced group is not in the expression's top-level sequence")
			}
			o.head = regexp.MustCompile(`^(?:` + concat(re.Sub[:i]...).String() + `)`)
			o.headMax = maxLen(concat(re.Sub[:i]...))
			o.value = regexp.MustCompile(`^(?:` + prefixOf(concat(re.Sub[i:]...)).String() + `)\z`)
		}
		out[k] = o
	}
	return out
})

// probe is how much of a text begun is tried on first: most candidates
// fail within a few bytes, and a beginning's beginning is one too.
const probe = 64

// could reports whether s, the text from a candidate start to the end,
// begins a match. A text longer than the pattern's window begins none.
func (o *opening) could(s string, w *meter) bool {
	if o.window >= 0 && len(s) > o.window {
		return false
	}
	return begins(o.begun, s, w)
}

// begins runs an expression of beginnings (prefixOf) on s, first on its
// first probe bytes: if they begin nothing, neither does s.
func begins(re *regexp.Regexp, s string, w *meter) bool {
	if n := len(s); n > probe {
		n = probe
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		w.add(n)
		if !re.MatchString(s[:n]) {
			return false
		}
	}
	w.add(len(s))
	return re.MatchString(s)
}

// valueFrom returns where, in s (the text from a contextual match's
// start), the value it replaces may start at the earliest: after the
// shortest head at its start, where what follows may begin the value;
// -1 if the value has not begun.
func (o *opening) valueFrom(s string, w *meter) int {
	if o.window >= 0 && len(s) > o.window {
		s = s[:o.window]
	}
	w.add(len(s))
	if !o.head.MatchString(s) {
		return -1
	}
	// Whether s[:n] holds a head only grows with n: the least n is found
	// by halves.
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi) / 2
		w.add(mid)
		if o.head.MatchString(s[:mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	// The value starts where a head ends, which is no further than the
	// longest head.
	for ; lo < len(s) && (o.headMax < 0 || lo <= o.headMax); lo++ {
		if begins(o.value, s[lo:], w) {
			return lo
		}
	}
	return -1
}

// prefixOf returns an expression that matches every beginning of every
// text re matches (the empty text too). Assertions are dropped: at the
// end of a beginning they depend on what comes next, so they may hold.
// Groups are dropped: nothing is captured.
func prefixOf(re *syntax.Regexp) *syntax.Regexp {
	sub := func() *syntax.Regexp { return re.Sub[0] }
	switch re.Op {
	case syntax.OpNoMatch:
		return re
	case syntax.OpLiteral:
		// (a(b(c)?)?)?: each letter, if the one before came.
		var p *syntax.Regexp
		for i := len(re.Rune) - 1; i >= 0; i-- {
			lit := &syntax.Regexp{Op: syntax.OpLiteral, Flags: re.Flags, Rune: re.Rune[i : i+1]}
			if p != nil {
				lit = concat(lit, p)
			}
			p = quest(lit)
		}
		return p
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return quest(re)
	case syntax.OpCapture, syntax.OpQuest:
		return prefixOf(sub())
	case syntax.OpStar, syntax.OpPlus:
		// Whole repetitions, then the beginning of one more.
		star := &syntax.Regexp{Op: syntax.OpStar, Flags: re.Flags, Sub: re.Sub}
		return concat(star, prefixOf(sub()))
	case syntax.OpRepeat:
		switch re.Max {
		case 0:
			return empty()
		case 1:
			return prefixOf(sub())
		}
		max := re.Max - 1
		if re.Max < 0 {
			max = -1
		}
		rep := &syntax.Regexp{Op: syntax.OpRepeat, Flags: re.Flags, Min: 0, Max: max, Sub: re.Sub}
		return concat(rep, prefixOf(sub()))
	case syntax.OpConcat:
		// The beginning of the first part, or all of it and the
		// beginning of the rest: each part is written twice, not once
		// for each part after it.
		if len(re.Sub) == 0 {
			return empty()
		}
		p := prefixOf(re.Sub[len(re.Sub)-1])
		for i := len(re.Sub) - 2; i >= 0; i-- {
			p = &syntax.Regexp{Op: syntax.OpAlternate, Sub: []*syntax.Regexp{prefixOf(re.Sub[i]), concat(re.Sub[i], p)}}
		}
		return p
	case syntax.OpAlternate:
		alts := make([]*syntax.Regexp, len(re.Sub))
		for i, s := range re.Sub {
			alts[i] = prefixOf(s)
		}
		return &syntax.Regexp{Op: syntax.OpAlternate, Sub: alts}
	}
	// The empty text, and the assertions (^, $, \A, \z, \b, \B).
	return empty()
}

func empty() *syntax.Regexp { return &syntax.Regexp{Op: syntax.OpEmptyMatch} }

func quest(re *syntax.Regexp) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpQuest, Flags: re.Flags &^ syntax.NonGreedy, Sub: []*syntax.Regexp{re}}
}

func concat(subs ...*syntax.Regexp) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}
}

// groupAt returns which part of re's top-level sequence the group
// numbered cap is, or -1 if it is none of them.
func groupAt(re *syntax.Regexp, cap int) int {
	if re.Op != syntax.OpConcat {
		return -1
	}
	for i, s := range re.Sub {
		if s.Op == syntax.OpCapture && s.Cap == cap {
			return i
		}
	}
	return -1
}

// startsWord reports whether every match of re starts with \b.
func startsWord(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpWordBoundary:
		return true
	case syntax.OpConcat:
		return len(re.Sub) > 0 && startsWord(re.Sub[0])
	case syntax.OpCapture:
		return startsWord(re.Sub[0])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !startsWord(s) {
				return false
			}
		}
		return true
	}
	return false
}

// endsWithWord reports whether every match of re ends with \b.
func endsWithWord(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpWordBoundary:
		return true
	case syntax.OpConcat:
		return len(re.Sub) > 0 && endsWithWord(re.Sub[len(re.Sub)-1])
	case syntax.OpCapture:
		return endsWithWord(re.Sub[0])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !endsWithWord(s) {
				return false
			}
		}
		return true
	}
	return false
}

// escapeBegins returns where the end of s that begins an escape starts
// (a "%" or "%4", "\u00", "&#1", "=", or the first bytes of a character,
// a zero-width one perhaps), or -1. Decoded, it may end a secret that
// the text before it begins.
func escapeBegins(s string) int {
	for i := max(0, len(s)-maxEscape+1); i < len(s); i++ {
		if beginsEscape(s[i:]) {
			return i
		}
	}
	return -1
}

// maxEscape is the length of the longest escape escapeAt decodes
// (&#x10FFFF; and padding: "&#" and 9 bytes before the ";").
const maxEscape = 12

// beginsEscape reports whether s is the beginning of an escape that
// escapeAt decodes, but not all of it.
func beginsEscape(s string) bool {
	hexes := func(s string, n int) bool {
		return len(s) <= n && strings.IndexFunc(s, func(c rune) bool { return !isHex(c) }) < 0
	}
	switch s[0] {
	case '%':
		return hexes(s[1:], 1)
	case '\\':
		return len(s) == 1 || (s[1] == 'u' || s[1] == 'U') && hexes(s[2:], 3) || s[1] == 'x' && hexes(s[2:], 1)
	case '&':
		if len(s) <= 2 {
			return s == "&" || s == "&#"
		}
		body := s[2:]
		if body[0] == 'x' || body[0] == 'X' {
			return len(body) <= 9 && hexes(body[1:], 8)
		}
		return len(body) <= 9 && strings.IndexFunc(body, func(c rune) bool { return c < '0' || c > '9' }) < 0
	case '=':
		return len(s) == 1 || s == "=\r" || s == "=3"
	}
	return utf8.RuneStart(s[0]) && !utf8.FullRuneInString(s)
}

func isHex(c rune) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
