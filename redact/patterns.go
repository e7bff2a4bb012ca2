package redact

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Every pattern but the key block is bounded: its match, with the name or
// header before a value, is at most a few kilobytes long, and the
// expression never looks further than that from where a match can start
// (window). A text as long as the attacker likes is then looked at in
// time linear in its length, and a Chat, which holds back what may still
// become a secret, never holds more than a match (maxHold).
const (
	// maxNameSide bounds an assignment's name on each side of its secret
	// word (com.example.security.oauth2.client-secret is 40 long).
	maxNameSide = 128
	// maxGap bounds the spaces around an assignment's = or :, and between
	// a bearer header's words.
	maxGap = 64
	// maxValue bounds an assignment's value: a longer one is taken up to
	// there. The assignment's window is its longest name, separator and
	// this.
	maxValue     = 4096
	assignWindow = 2*maxNameSide + len("credential") + 2 + 2*maxGap + 2 + maxValue
	// maxBearer bounds a token after Bearer: servers cap a request's
	// headers at 8 KiB, a JWT included.
	maxBearer = 8192
	// maxJWT bounds a JWT: what comes before its signature, which makes
	// it a match, must fit the 8 KiB a Chat holds.
	maxJWT = 8000
)

type pattern struct {
	kind string
	// re finds the matches in a whole text; at, the same expression
	// anchored at the start, checks one candidate position.
	re, at *regexp.Regexp
	// group is the submatch to replace; 0 replaces the whole match.
	group int
	// hint lists lower-case substrings one of which every match
	// contains, looked for before any regular expression runs so that
	// plain output stays fast. A pattern that replaces its whole match
	// starts every match with a hint: a Chat knows a match may be coming
	// from a hint's first letters at the end of the text (see hold.go).
	hint []string
	// start returns where a match containing the hint found at a would
	// start, or -1 when none can. nil: the expression runs over the whole
	// text (it starts with a literal, which the regexp package finds
	// fast by itself).
	start func(t *text, a anchor) int
	// match, if set, finds the match holding the hint at a in place of
	// start and the expression, by hand, and returns its submatches'
	// indexes, or nil.
	match func(t *text, a anchor) []int
	// lead returns where a match that holds the hint at a may start,
	// judged from the text up to the hint only, for a match that may
	// still come (a Chat): -1 if none can. nil: at the hint.
	lead func(t *text, a anchor) int
	// coming, if set, answers for the pattern's expressions whether a
	// match holding the hint at a may still come, or go on, past the end
	// of the text (a Chat), and from where it would replace: (-1, 0) if
	// none can; else its start, and where its value starts (the text's
	// end if it has not begun).
	coming func(t *text, a anchor) (int, int)
	// contextual patterns recognise a secret by what surrounds it (a
	// name, a header, a URL) rather than by its own form. They are not
	// applied to the user's prompts (see RedactPrompt).
	contextual bool
	// window is how much of the text from a candidate start the anchored
	// expression looks at: its longest match and one byte more (for a \b
	// after it), or, where the expression has no bound of its own (a JWT,
	// an assignment's value), the bound chosen for it; a match never runs
	// past it. -1: no bound (the key block, found in the whole text).
	window int
	// block marks the key block: a match that runs to the end of the
	// text goes on to the block's end line (a Chat's tail).
	block bool
	// stage is the pattern's place among the stages of a redaction
	// (hit.stage): its hits mask the text for the patterns after it.
	stage int
}

// text is what a pattern's start function looks at: the text, and what
// it learnt of it, so that each byte is looked at once for all the
// candidates, taken in order.
type text struct {
	s                     []byte
	digit, letter, valEnd cursor
	// bound is the last word boundary found (nextBoundary), and run the
	// last run of name characters (nameRun).
	bound cursor
	run   [2]int
	work  *meter
	// sc, if set, says which hits are taken (scanned.takes).
	sc *scanned
}

// reset forgets what t learnt of its text, which was masked since.
func (t *text) reset() {
	t.digit, t.letter, t.valEnd, t.bound, t.run = cursor{}, cursor{}, cursor{}, cursor{}, [2]int{}
}

// cursor finds, for positions asked in increasing order, the first byte
// at or after each that a test holds for, looking at each byte once.
type cursor struct{ from, at int }

// next returns the first j >= i with ok(s[j]), or len(s).
func (c *cursor) next(t *text, i int, ok func(byte) bool) int {
	if c.from <= i && i <= c.at && c.at > 0 {
		return c.at
	}
	j := i
	for j < len(t.s) && !ok(t.s[j]) {
		j++
	}
	t.work.add(j - i)
	c.from, c.at = i, j
	return j
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return isLower(c) || isUpper(c) }
func notValue(c byte) bool { return !valueChar(c) }

// atWord starts a match at its hint, which starts with \b: the byte
// before it must not be a word character.
func atWord(t *text, a anchor) int {
	if a.at > 0 && isWord(t.s[a.at-1]) {
		return -1
	}
	return a.at
}

// nameMatch finds an assignment's match (NAME = value) for the secret
// word found at a, as the expression would from its start, without
// running it: it is the longest-running of the patterns, and most hints
// in code are no such assignment (key := p.parseKey()). The match starts
// where the name does: the first word boundary among the name characters
// at most maxNameSide before the word. The name runs on at most
// maxNameSide after it, up to the assignment (an optional quote, spaces,
// then : or =), and must look secret (SecretName); the value after it,
// up to the window, must be one (literalSecret: it does not start with $
// or %, and has a letter and a digit). A value that is no secret must
// not cost a look over it from every later hint ("key=$1" over and
// over). It returns the submatches' indexes, as the expression's, or nil.
func nameMatch(t *text, a anchor) []int {
	s := t.s
	st, end, ok := nameAround(t, a)
	if !ok {
		return nil
	}
	sep, ok := separator(s, end)
	if !ok || sep == len(s) || !SecretName(string(s[st:end])) {
		return nil
	}
	limit := min(len(s), st+assignWindow)
	v, short := valueStart(s, sep)
	e := min(t.valEnd.next(t, v, notValue), limit)
	if e-v < minSecretLen {
		// The expression takes ":" for the separator of ":=" when the
		// value after ":=" is too short: then "=" starts the value.
		if !short {
			return nil
		}
		v--
		if e = min(t.valEnd.next(t, v, notValue), limit); e-v < minSecretLen {
			return nil
		}
	}
	if s[v] == '$' || s[v] == '%' || t.digit.next(t, v, isDigit) >= e || t.letter.next(t, v, isLetter) >= e {
		return nil
	}
	return []int{st, e, st, end, v, e}
}

// nameAround returns the name an assignment's match holding the secret
// word at a has: from its start (the first word boundary at most
// maxNameSide before the word, among name characters) to the end of the
// run of name characters, which must be at most maxNameSide after the
// word. ok is false when there is no such name. The end may be the
// text's end: the name may go on.
func nameAround(t *text, a anchor) (st, end int, ok bool) {
	// The hints of one run of name characters ("keykeykey…") share its
	// bounds and its word boundaries, each found once.
	rs, re := t.nameRun(a.at)
	st = t.nextBoundary(max(rs, a.at-maxNameSide))
	if st > a.at || re > a.at+a.len+maxNameSide {
		return 0, 0, false
	}
	return st, re, true
}

// nameRun returns the run of name characters that holds i.
func (t *text) nameRun(i int) (int, int) {
	if t.run[0] <= i && i < t.run[1] {
		return t.run[0], t.run[1]
	}
	s := t.s
	st, end := i, i
	for st > 0 && nameChar(s[st-1]) {
		st--
	}
	for end < len(s) && nameChar(s[end]) {
		end++
	}
	t.work.add(end - st)
	t.run = [2]int{st, end}
	return st, end
}

// nextBoundary returns the first word boundary at or after i (len(s)+1
// if none), for i asked in increasing order.
func (t *text) nextBoundary(i int) int {
	if t.bound.from <= i && i <= t.bound.at && t.bound.at > 0 {
		return t.bound.at
	}
	j := i
	for j <= len(t.s) && !wordBoundary(t.s, j) {
		j++
	}
	t.work.add(j - i)
	t.bound = cursor{i, j}
	return j
}

// wordBoundary is regexp's \b at i.
func wordBoundary(s []byte, i int) bool {
	return (i > 0 && isWord(s[i-1])) != (i < len(s) && isWord(s[i]))
}

// separator returns where an assignment's separator (:=, : or =) starts
// after a name ending at i: after an optional quote and at most maxGap
// spaces. ok is false if something else comes there; the position is
// len(s) if the text ends before the separator does.
func separator(s []byte, i int) (int, bool) {
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for gap := 0; i < len(s) && isSpace(s[i]); gap++ {
		if gap == maxGap {
			return 0, false
		}
		i++
	}
	if i == len(s) {
		return i, true
	}
	return i, s[i] == ':' || s[i] == '='
}

// valueStart returns where the value after the separator at sep starts:
// after the separator, at most maxGap spaces and an optional quote.
// short says the separator was ":=" with the value right after it: if
// that value is too short, the expression takes the "=" for its start.
func valueStart(s []byte, sep int) (v int, short bool) {
	v = sep + 1
	colonEq := s[sep] == ':' && v < len(s) && s[v] == '='
	if colonEq {
		v++
	}
	after := v
	for gap := 0; v < len(s) && isSpace(s[v]) && gap < maxGap; gap++ {
		v++
	}
	if v < len(s) && (s[v] == '"' || s[v] == '\'') {
		v++
	}
	return v, colonEq && v == after
}

// nameComing is nameMatch for a text that may go on (pattern.coming):
// the name and what follows it may not have come yet. A name that has
// ended must look secret and be followed by the assignment; a value that
// has ended, or reached the window, is found or not already, and one
// that has begun must not be a reference ($VAR, %VAR%). It says what the
// expressions would, by the same steps as nameMatch, without running
// them: on a name at the end of the text they run again on each piece.
func nameComing(t *text, a anchor) (int, int) {
	s := t.s
	st, end, ok := nameAround(t, a)
	if !ok {
		return -1, 0
	}
	if end == len(s) {
		return st, len(s)
	}
	if !SecretName(string(s[st:end])) {
		return -1, 0
	}
	sep, ok := separator(s, end)
	if !ok {
		return -1, 0
	}
	if sep == len(s) {
		return st, len(s)
	}
	v, short := valueStart(s, sep)
	if v == len(s) {
		return st, len(s)
	}
	e := t.valEnd.next(t, v, notValue)
	if e < len(s) || e-st >= assignWindow {
		return -1, 0 // the value has ended: its match, if any, is found
	}
	if short {
		return st, v - 1 // the "=" of ":=" starts the value if it is short
	}
	if s[v] == '$' || s[v] == '%' {
		return -1, 0
	}
	return st, v
}

// isSpace is regexp's \s.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// valueChar is what the assignment's value is made of.
func valueChar(c byte) bool { return valueChars[c] }

var valueChars = func() (t [256]bool) {
	for c := range 256 {
		t[c] = !isSpace(byte(c)) && strings.IndexByte("'\"()[]{}<>,;`", byte(c)) < 0
	}
	return t
}()

func nameChar(c byte) bool { return isWord(c) || c == '.' || c == '-' }

// maxScheme bounds a URL's scheme (postgresql+asyncpg is 18 long).
const maxScheme = 32

// schemeStart starts a URL's match at its scheme: the run of scheme
// characters before the "://" at a, at most maxScheme long, from its
// first letter.
func schemeStart(t *text, a anchor) int {
	s, i := t.s, a.at
	j := i
	for j > 0 && i-j < maxScheme && (isAlnum(s[j-1]) || s[j-1] == '+' || s[j-1] == '.' || s[j-1] == '-') {
		j--
	}
	for j < i && !isLetter(s[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// The patterns' indexes that code refers to; the assignment is the last.
const (
	privateKey = 0
	assignment = 13
)

// keyEnd is a key block's end line, which ends a block's match and a
// Chat's swallowing of a block it passed on (see span).
const keyEnd = `-----END[A-Z0-9 ]{0,64}PRIVATE KEY(?: BLOCK)?-----`

func allPatterns() []pattern {
	return []pattern{
		newPattern(pattern{kind: "private-key", hint: []string{"-----begin"}, block: true}, `-----BEGIN[A-Z0-9 ]{0,64}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(`+keyEnd+`|\z)`),
		newPattern(pattern{kind: "aws-access-key", hint: []string{"akia", "asia", "abia", "acca"}, start: atWord}, `\b(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`),
		newPattern(pattern{kind: "github-token", hint: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, start: atWord}, `\bgh[pousr]_[A-Za-z0-9]{30,255}`),
		newPattern(pattern{kind: "github-token", hint: []string{"github_pat_"}, start: atWord}, `\bgithub_pat_[A-Za-z0-9_]{30,255}`),
		newPattern(pattern{kind: "slack-token", hint: []string{"xox"}, start: atWord}, `\bxox[abposre]-[A-Za-z0-9-]{10,255}`),
		newPattern(pattern{kind: "slack-webhook", hint: []string{"https://hooks.slack.com/"}, start: atWord}, `\bhttps://hooks\.slack\.com/(services|workflows)/[A-Za-z0-9/_-]{1,255}`),
		newPattern(pattern{kind: "anthropic-key", hint: []string{"sk-ant-"}, start: atWord}, `\bsk-ant-[A-Za-z0-9_-]{20,255}`),
		newPattern(pattern{kind: "openai-key", hint: []string{"sk-"}, start: atWord}, `\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,255}`),
		newPattern(pattern{kind: "google-api-key", hint: []string{"aiza"}, start: atWord}, `\bAIza[0-9A-Za-z_-]{35}`),
		newPattern(pattern{kind: "stripe-key", hint: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"}, start: atWord}, `\b(sk|rk)_(live|test)_[0-9A-Za-z]{16,255}`),
		newPattern(pattern{kind: "jwt", hint: []string{"eyj"}, start: atWord, window: maxJWT},
			`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
		newPattern(pattern{kind: "bearer", group: 1, hint: []string{"bearer", "authorization"}, start: atWord, contextual: true, window: 200 + maxBearer},
			`(?i)\b(?:authorization:\s{0,64}(?:bearer|basic|token)|bearer)\s{1,64}([A-Za-z0-9._~+/=-]{16,})`),
		newPattern(pattern{kind: "url-password", group: 1, hint: []string{"://"}, start: schemeStart, lead: schemeStart, contextual: true},
			`[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^/\s:@]{1,128}:([^/\s@]{3,1000})@`),
		// NAME=value, NAME: "value", "name": "value" where NAME looks secret
		// and the value looks like a literal secret rather than code (see
		// literalSecret).
		newPattern(pattern{kind: "assignment", group: 2, hint: []string{"key", "token", "secret", "pass", "credential", "auth", "cookie", "private"}, match: nameMatch, coming: nameComing, contextual: true, window: assignWindow},
			`(?i)\b([a-z0-9_.-]{0,128}(?:key|token|secret|pass|credential|auth|cookie|private)[a-z0-9_.-]{0,128})["']?\s{0,64}(?::=|[:=])\s{0,64}["']?([^\s'"()\[\]{}<>,;`+"`"+`]{8,})`),
	}
}

// newPattern compiles a pattern. Its window is the one declared for it,
// or its expression's longest match and a byte, or none.
func newPattern(p pattern, expr string) pattern {
	p.re = regexp.MustCompile(expr)
	p.at = regexp.MustCompile(`^(?:` + expr + `)`)
	if p.window == 0 {
		p.window = -1
		re, err := syntax.Parse(expr, syntax.Perl)
		if err != nil {
			panic("redact: " + p.kind + ": " + err.Error())
		}
		if n := maxLen(re); n >= 0 {
			p.window = n + 1
		}
	}
	return p
}

// maxLen returns the length in bytes of re's longest match, or -1 if
// it has none.
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += runeMax(r, re.Flags&syntax.FoldCase != 0)
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return utf8.RuneLen(min(re.Rune[len(re.Rune)-1], unicode.MaxRune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		n := maxLen(re.Sub[0])
		if re.Max < 0 || n < 0 {
			return -1
		}
		return n * re.Max
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s)
			if m < 0 {
				return -1
			}
			n += m
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s)
			if m < 0 {
				return -1
			}
			n = max(n, m)
		}
		return n
	}
	return 0 // the empty text and the assertions
}

// runeMax is the most bytes r takes, in any case if fold is set (the
// Kelvin sign matches k).
func runeMax(r rune, fold bool) int {
	n := utf8.RuneLen(r)
	for f := unicode.SimpleFold(r); fold && f != r; f = unicode.SimpleFold(f) {
		n = max(n, utf8.RuneLen(f))
	}
	return n
}

// patterns are compiled on first use: bridle re-executes itself as the
// first process of every sandboxed command, and that process never
// redacts, so package initialisation must stay cheap.
func patterns() []pattern { return compiled().patterns }

// patternHints lists each pattern's hints, indexed like ps.
func patternHints(ps []pattern) [][]string {
	hints := make([][]string, len(ps))
	for i, p := range ps {
		hints[i] = p.hint
	}
	return hints
}

// anchors is the table of every pattern's hints, indexed like patterns,
// then the decoding hints (decodeHints).
func anchors() *anchorTable { return compiled().anchors }

// keyEndRE finds a key block's end line.
func keyEndRE() *regexp.Regexp { return compiled().keyEnd }

var compiled = sync.OnceValue(func() struct {
	patterns []pattern
	anchors  *anchorTable
	keyEnd   *regexp.Regexp
} {
	ps := allPatterns()
	for i := range ps {
		ps[i].stage = firstPatternStage + i
	}
	if ps[privateKey].kind != "private-key" || ps[assignment].kind != "assignment" || len(ps) != assignment+1 {
		panic("redact: the patterns' indexes are out of date")
	}
	return struct {
		patterns []pattern
		anchors  *anchorTable
		keyEnd   *regexp.Regexp
	}{ps, newAnchorTable(append(patternHints(ps), decodeHints)), regexp.MustCompile(keyEnd)}
})

// matchAt runs p's anchored expression on s from st, on no more than its
// window, and returns the submatches' indexes in s, or nil.
func (p *pattern) matchAt(s []byte, st int, w *meter) []int {
	in := s[st:]
	if p.window >= 0 && len(in) > p.window {
		in = in[:p.window]
	}
	w.add(len(in))
	m := p.at.FindSubmatchIndex(in)
	for k := range m {
		if m[k] >= 0 {
			m[k] += st
		}
	}
	return m
}

// find appends p's matches in s, given where its hints were found in s
// before the last hits were masked, from next on: what came before was
// looked at already, and a match of p that ended there found (a Chat's
// context).
func (p *pattern) find(t *text, found []anchor, hs []hit, next int) []hit {
	s := t.s
	live := func(a anchor) bool { return bytes.IndexByte(s[a.at:a.at+a.len], '[') < 0 }
	if p.start == nil && p.match == nil && (t.sc == nil || t.sc.dec == nil) {
		if !slices.ContainsFunc(found, live) {
			return hs
		}
		t.work.add(len(s) - next)
		for _, m := range p.re.FindAllSubmatchIndex(s[next:], -1) {
			for k := range m {
				if m[k] >= 0 {
					m[k] += next
				}
			}
			hs = p.take(t, m, hs)
		}
		return hs
	}
	// Run the anchored expression only where a match can start: at the
	// hints, in order. Searching the whole text with an expression that
	// starts with \b or a character class is slow.
	sortAnchors(found)
	tried := -1
	for _, a := range found {
		// A match starts at or before its hint: a hint inside the last
		// match is passed over without a look.
		if a.at < next || !live(a) {
			continue
		}
		// In a decoded text, a match is taken only with an escape in it
		// or next to it: a hint with none within reach is passed over.
		if t.sc != nil && p.window >= 0 && !t.sc.escapeNear(a.at-2*maxNameSide-2, a.at+a.len+p.window+1) {
			continue
		}
		var m []int
		switch {
		case p.start == nil && p.match == nil:
			// A key block in a decoded text: tried from each begin line,
			// up to what can be taken (maxDecoded), as only one taken
			// hides what is inside it: which text around an escape is
			// decoded must not change what is found in it.
			if a.at == tried {
				continue
			}
			tried = a.at
			if m = p.matchAt(s[:min(len(s), a.at+maxDecoded+1)], a.at, t.work); m == nil {
				continue
			}
		case p.match != nil:
			if m = p.match(t, a); m == nil || m[0] < next || m[0] == tried {
				continue
			}
			tried = m[0]
		default:
			st := p.start(t, a)
			if st < 0 || st < next || st == tried {
				continue
			}
			tried = st
			if m = p.matchAt(s, st, t.work); m == nil {
				continue
			}
		}
		n := len(hs)
		if hs = p.take(t, m, hs); len(hs) > n {
			// The next match starts after this one. After a match
			// that was no secret (SecretName, literalSecret), later
			// candidates inside it still count.
			next = m[1]
		}
	}
	return hs
}

// sortAnchors orders anchors by where they start (a table reports them
// where they end).
func sortAnchors(as []anchor) {
	cmp := func(a, b anchor) int { return a.at - b.at }
	if !slices.IsSortedFunc(as, cmp) {
		slices.SortFunc(as, cmp)
	}
}

// take appends the hit of match m, unless it is not a secret after all,
// or not taken in t (scanned.takes). A key block's match that runs to the
// end of s goes on to its end line.
func (p *pattern) take(t *text, m []int, hs []hit) []hit {
	s := t.s
	start, end := m[2*p.group], m[2*p.group+1]
	if start < 0 || bytes.HasPrefix(s[start:end], []byte("[REDACTED:")) || t.sc != nil && !t.sc.takes(start, m[0], m[1]) {
		return hs
	}
	if p.kind == "assignment" && (!SecretName(string(s[m[2]:m[3]])) || !literalSecret(string(s[start:end]))) {
		return hs
	}
	h := hit{start: start, end: end, from: m[0], to: m[1], kind: p.kind, stage: p.stage}
	if p.block && m[1] == len(s) && m[2] == m[3] {
		h.tails = []tail{{block: true}}
	}
	return append(hs, h)
}
