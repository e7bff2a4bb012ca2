// Package redact removes secrets from text before it is persisted or sent
// anywhere: the values of secret-looking environment variables and .env
// files, private key blocks, and common token formats.
package redact

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// minSecretLen keeps short values ("1", "true") from being treated as
// secrets: redacting them would garble unrelated output.
const minSecretLen = 8

// Redactor replaces secrets in text with [REDACTED:kind] markers. It is
// safe for concurrent use once built.
type Redactor struct {
	// literals are the forms of the known secret values (forms), longest
	// first so that a value containing another is replaced whole.
	literals []literal
	// values counts the values literals came from.
	values int
	// tab is the anchor table of the patterns and literals, built on
	// first use after a value was added (table).
	tab tableRef
}

// New returns a redactor that knows the secret-named variables of env
// (as os.Environ returns them) besides the built-in token formats.
func New(env []string) *Redactor {
	r := &Redactor{}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if ok && SecretName(name) {
			r.add(value, "env:"+name)
		}
	}
	return r
}

// Values counts the exact values r knows; it only grows, so a text
// redacted when it was n is redacted the same while it stays n.
func (r *Redactor) Values() int { return r.values }

// AddValue makes r redact value wherever it appears. kind names its
// origin in the marker (for example "env:FOO" or ".env:DB_PASSWORD").
func (r *Redactor) AddValue(value, kind string) {
	r.add(value, kind)
}

func (r *Redactor) add(value, kind string) {
	value = strings.TrimSpace(value)
	if len(value) < minSecretLen {
		return
	}
	for _, l := range r.literals {
		if l.value == value {
			return
		}
	}
	r.values++
	r.literals = append(r.literals, forms(value, kind)...)
	slices.SortStableFunc(r.literals, func(a, b literal) int { return len(b.value) - len(a.value) })
	r.tab.Store(nil)
}

// AddDotEnv reads the assignments of a .env-style file and redacts every
// value long enough to be a secret, whatever its name: .env files exist to
// hold secrets.
func (r *Redactor) AddDotEnv(name string, data []byte) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		r.add(value, name+":"+strings.TrimSpace(key))
	}
}

// LoadDotEnvFiles adds the values of the .env files directly in dir
// (.env, .env.local, .env.production, ...). Missing files are fine. See
// LoadDotEnvTree for the directories below.
func (r *Redactor) LoadDotEnvFiles(dir string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer root.Close()
	entries, err := readDir(root, ".")
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !DotEnvName(e.Name()) {
			continue
		}
		if data, err := readSmall(root, e.Name()); err == nil {
			r.AddDotEnv(e.Name(), data)
		}
	}
}

// secretWords mark a variable name as holding a secret where one of them
// (or its plural) ends a word of it: APIKEY, api_key, apiKeyID and
// db_passwords, but not KEYBOARD, KEYWORD, Tokenizer or author.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTH", "AUTHORIZATION", "COOKIE", "SESSION", "SESSIONID", "SESSID", "PRIVATE", "SIGNATURE", "DSN", "CONNECTION_STRING", "DATABASE_URL"}

// secretSegments mark a name as holding a secret only as one of its words
// (DB_PASS, adminPass), not inside another (PASSTHROUGH, BYPASS, COMPASS).
var secretSegments = []string{"PASS"}

// notSecret are names that contain a secret word but hold none.
var notSecret = map[string]bool{"KEYTIMEOUT": true, "SSH_AUTH_SOCK": true, "XDG_SESSION_ID": true, "XDG_SESSION_TYPE": true,
	"XDG_SESSION_CLASS": true, "XDG_SESSION_DESKTOP": true, "DESKTOP_SESSION": true, "SESSION_MANAGER": true, "GPG_KEY_ID": true}

// SecretName reports whether an environment variable or assignment name
// looks like it holds a secret.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	if notSecret[n] {
		return false
	}
	for _, w := range secretWords {
		for off := 0; ; {
			i := strings.Index(n[off:], w)
			if i < 0 {
				break
			}
			if endsWord(name, off+i+len(w)) {
				return true
			}
			off += i + 1
		}
	}
	for _, w := range secretSegments {
		if hasSegment(name, w) {
			return true
		}
	}
	return false
}

// hasSegment reports whether seg is one of name's words, ignoring case:
// words are separated by characters other than ASCII letters and digits,
// and a lower-case letter followed by an upper-case one starts a new word
// (dbPass is db, Pass).
func hasSegment(name, seg string) bool {
	start := 0
	for i := 0; i <= len(name); i++ {
		switch {
		case i == len(name) || !isAlnum(name[i]):
			if strings.EqualFold(name[start:i], seg) {
				return true
			}
			start = i + 1
		case i > 0 && isLower(name[i-1]) && isUpper(name[i]):
			if strings.EqualFold(name[start:i], seg) {
				return true
			}
			start = i
		}
	}
	return false
}

// endsWord reports whether a word of name ends at i, or at i+1 if
// name[i] is a plural s: the name ends, or what follows is no letter, or
// a lower-case letter is followed by an upper-case one (tokenValue).
func endsWord(name string, i int) bool {
	ends := func(i int) bool {
		return i == len(name) || !isLower(name[i]) && !isUpper(name[i]) || isLower(name[i-1]) && isUpper(name[i])
	}
	return ends(i) || (name[i] == 's' || name[i] == 'S') && ends(i+1)
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isLower(c) || isUpper(c) || c >= '0' && c <= '9' }

// isWord is regexp's \w: what \b tells apart from the rest.
func isWord(c byte) bool { return isAlnum(c) || c == '_' }

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
	// start returns where a match containing the hint found at i would
	// start, or -1 when none can. nil: the expression runs over the whole
	// text (it starts with a literal, which the regexp package finds
	// fast by itself).
	start func(s []byte, i int) int
	// lead returns where a match that holds the hint at i may start,
	// judged from the text up to the hint only, for a match that may
	// still come (a Chat): -1 if none can. nil: at the hint.
	lead func(s []byte, i int) int
	// contextual patterns recognise a secret by what surrounds it (a
	// name, a header, a URL) rather than by its own form. They are not
	// applied to the user's prompts (see RedactPrompt).
	contextual bool
}

// atWord starts a match at its hint, which starts with \b: the byte
// before it must not be a word character.
func atWord(s []byte, i int) int {
	if i > 0 && isWord(s[i-1]) {
		return -1
	}
	return i
}

// nameStart starts an assignment's match where the name holding the hint
// at i starts: the run of name characters around it, from its first word
// character (\b). The name must run up to the assignment (an optional
// quote, spaces, then : or =), the name must look secret (SecretName) and
// the value after it must have a digit (literalSecret), or there is no
// match: most hints in code are not such assignments (key := p.parseKey()),
// and these checks are much cheaper than the expression.
func nameStart(s []byte, i int) int {
	st, end := nameSpan(s, i)
	i = end
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i == len(s) || s[i] != ':' && s[i] != '=' || !SecretName(string(s[st:end])) {
		return -1
	}
	// The value is a run of value characters after the separator, its
	// spaces and its quote; "=" and ":" may start it (key:=x is matched
	// as key: then =x), but they are no digit.
	for i < len(s) && (isSpace(s[i]) || s[i] == '"' || s[i] == '\'' || s[i] == ':' || s[i] == '=') {
		i++
	}
	for ; i < len(s) && valueChar(s[i]); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return st
		}
	}
	return -1
}

// nameSpan returns the name that holds the hint at i: the run of name
// characters around it, from its first word character (\b).
func nameSpan(s []byte, i int) (int, int) {
	for i > 0 && nameChar(s[i-1]) {
		i--
	}
	st := i
	for st < len(s) && !isWord(s[st]) {
		st++
	}
	for i < len(s) && nameChar(s[i]) {
		i++
	}
	return st, i
}

// nameLead is nameStart for a text that may go on: the name and what
// follows it may not have come yet, nor the value's digit; a name that
// has ended must look secret and be followed by the assignment.
func nameLead(s []byte, i int) int {
	st, end := nameSpan(s, i)
	if end == len(s) {
		return st
	}
	if !SecretName(string(s[st:end])) {
		return -1
	}
	if s[end] == '"' || s[end] == '\'' {
		end++
	}
	for end < len(s) && isSpace(s[end]) {
		end++
	}
	if end < len(s) && s[end] != ':' && s[end] != '=' {
		return -1
	}
	return st
}

// isSpace is regexp's \s.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// valueChar is what the assignment's value is made of.
func valueChar(c byte) bool {
	return !isSpace(c) && strings.IndexByte("'\"()[]{}<>,;`", c) < 0
}

func nameChar(c byte) bool { return isWord(c) || c == '.' || c == '-' }

// ghStart starts a GitHub token at its hint, if the hint is followed by
// what a token has there ("gh" occurs in many words).
func ghStart(s []byte, i int) int {
	if i+3 < len(s) && strings.IndexByte("pousr", s[i+2]) >= 0 && s[i+3] == '_' || bytes.HasPrefix(s[i:], []byte("github_pat_")) {
		return atWord(s, i)
	}
	return -1
}

// schemeStart starts a URL's match at its scheme: the run of scheme
// characters before the "://" at i, from its first letter.
func schemeStart(s []byte, i int) int {
	j := i
	for j > 0 && (isAlnum(s[j-1]) || s[j-1] == '+' || s[j-1] == '.' || s[j-1] == '-') {
		j--
	}
	for j < i && !isLower(s[j]) && !isUpper(s[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func newPattern(p pattern, expr string) pattern {
	p.re = regexp.MustCompile(expr)
	p.at = regexp.MustCompile(`^(?:` + expr + `)`)
	return p
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

var compiled = sync.OnceValue(func() struct {
	patterns []pattern
	anchors  *anchorTable
} {
	ps := allPatterns()
	return struct {
		patterns []pattern
		anchors  *anchorTable
	}{ps, newAnchorTable(append(patternHints(ps), decodeHints))}
})

func allPatterns() []pattern {
	return []pattern{
		newPattern(pattern{kind: "private-key", hint: []string{"-----begin"}}, `-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`),
		newPattern(pattern{kind: "aws-access-key", hint: []string{"akia", "asia", "abia", "acca"}, start: atWord}, `\b(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`),
		newPattern(pattern{kind: "github-token", hint: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, start: ghStart}, `\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`),
		newPattern(pattern{kind: "slack-token", hint: []string{"xox"}, start: atWord}, `\bxox[abposre]-[A-Za-z0-9-]{10,}`),
		newPattern(pattern{kind: "slack-webhook", hint: []string{"https://hooks.slack.com/"}, start: atWord}, `\bhttps://hooks\.slack\.com/(services|workflows)/[A-Za-z0-9/_-]+`),
		newPattern(pattern{kind: "anthropic-key", hint: []string{"sk-ant-"}, start: atWord}, `\bsk-ant-[A-Za-z0-9_-]{20,}`),
		newPattern(pattern{kind: "openai-key", hint: []string{"sk-"}, start: atWord}, `\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`),
		newPattern(pattern{kind: "google-api-key", hint: []string{"aiza"}, start: atWord}, `\bAIza[0-9A-Za-z_-]{35}`),
		newPattern(pattern{kind: "stripe-key", hint: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"}, start: atWord}, `\b(sk|rk)_(live|test)_[0-9A-Za-z]{16,}`),
		newPattern(pattern{kind: "jwt", hint: []string{"eyj"}, start: atWord}, `\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
		newPattern(pattern{kind: "bearer", group: 1, hint: []string{"bearer", "authorization"}, start: atWord, contextual: true}, `(?i)\b(?:authorization:\s*(?:bearer|basic|token)|bearer)\s+([A-Za-z0-9._~+/=-]{16,})`),
		newPattern(pattern{kind: "url-password", group: 1, hint: []string{"://"}, start: schemeStart, lead: schemeStart, contextual: true}, `[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^/\s@]{3,})@`),
		// NAME=value, NAME: "value", "name": "value" where NAME looks secret
		// and the value looks like a literal secret rather than code (see
		// literalSecret).
		newPattern(pattern{kind: "assignment", group: 2, hint: []string{"key", "token", "secret", "pass", "credential", "auth", "cookie", "private"}, start: nameStart, lead: nameLead, contextual: true},
			`(?i)\b([a-z0-9_.-]*(?:key|token|secret|pass|credential|auth|cookie|private)[a-z0-9_.-]*)["']?\s*(?::=|[:=])\s*["']?([^\s'"()\[\]{}<>,;`+"`"+`]{8,})`),
	}
}

// A hit is one secret found in a text.
type hit struct {
	// start and end bound what is replaced.
	start, end int
	// from and to bound the whole match that found it, context included
	// (an assignment's name): text cut inside it might not be recognised
	// as a secret.
	from, to int
	kind     string
}

// Redact returns s with every secret replaced. The number of lines is
// kept: a multi-line secret becomes a marker followed by empty lines.
func (r *Redactor) Redact(s string) string {
	return render(s, r.hits(s, false))
}

// RedactPrompt redacts what the user wrote: the values bridle knows to be
// secret (its secret-named environment variables, the workspace's .env
// files), private key blocks and the token formats that cannot be
// ordinary text (sk-ant-…, ghp_…, AKIA…, JWTs). The patterns that guess
// from context (NAME=value, bearer headers, passwords in URLs) are left
// out: in a prompt they are as likely the user's example or question as
// a secret, and rewriting them would change what was asked. It returns
// the kind of each secret replaced, one for each occurrence.
func (r *Redactor) RedactPrompt(s string) (string, []string) {
	return withKinds(s, r.hits(s, true))
}

// RedactKinds is Redact that also returns the kind of each secret
// replaced, one for each occurrence.
func (r *Redactor) RedactKinds(s string) (string, []string) {
	return withKinds(s, r.hits(s, false))
}

func withKinds(s string, hs []hit) (string, []string) {
	if len(hs) == 0 {
		return s, nil
	}
	kinds := make([]string, len(hs))
	for i, h := range hs {
		kinds[i] = h.kind
	}
	return render(s, hs), kinds
}

// hits returns the secrets in s, ordered and not overlapping: where two
// overlap they become one, named by the first.
func (r *Redactor) hits(s string, prompt bool) []hit {
	return r.hitsDepth(s, prompt, 0)
}

// scanned is what one pass of a redactor's anchor table found in a text.
type scanned struct {
	t *literalTable
	// found lists where each pattern's hints, the escapes (at
	// len(patterns())) and each seed (after) occur.
	found [][]anchor
	// state is the table's state after the last byte.
	state int
}

// none says the scan found nothing (no hint, escape or seed), and that
// every known value has a seed it would have found.
func (sc scanned) none() bool {
	return len(sc.t.rest) == 0 && !slices.ContainsFunc(sc.found, func(a []anchor) bool { return len(a) > 0 })
}

func (r *Redactor) scan(s string) scanned {
	t := r.table()
	found, state := t.anchors.scan(s, len(patterns())+1+len(t.seeds))
	return scanned{t, found, state}
}

func (r *Redactor) hitsDepth(s string, prompt bool, depth int) []hit {
	return r.hitsOf(s, r.scan(s), prompt, depth)
}

// hitsOf is hitsDepth with the scan of s done.
func (r *Redactor) hitsOf(s string, sc scanned, prompt bool, depth int) []hit {
	// One pass finds the patterns' hints and the literals' seeds. Each
	// pattern then looks at the text with what was found before it
	// masked, as if it were already replaced by a marker: a token that
	// follows a known value starts a word, and a value is not taken for
	// part of a longer token.
	// The hints are found once, in s; a pattern skips those that the
	// masking before it covered, as a search of the masked text would.
	ps := patterns()
	t, found := sc.t, sc.found
	var hs []hit
	if r != nil {
		hs = r.literalHits(s, t, found[len(ps)+1:])
	}
	// Text that is escaped or encoded (percent, JSON, HTML escapes,
	// zero-width characters) is decoded and looked at again.
	hs = append(hs, r.decodedHits(s, found[len(ps)], prompt, depth)...)
	found = found[:len(ps)]
	if len(hs) == 0 && !slices.ContainsFunc(found, func(a []anchor) bool { return len(a) > 0 }) && !strings.Contains(s, "-----END") {
		return nil // most output: no copy of it is needed
	}
	text := []byte(s)
	mask(text, hs)
	for k, p := range ps {
		if prompt && p.contextual {
			continue
		}
		n := len(hs)
		hs = p.find(text, found[k], hs)
		mask(text, hs[n:])
	}
	if !prompt {
		hs = orphanEnd(text, hs)
	}
	return merge(hs)
}

// merge orders hs and joins the hits that overlap, each named by the
// first.
func merge(hs []hit) []hit {
	if len(hs) < 2 {
		return hs
	}
	slices.SortStableFunc(hs, func(a, b hit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	out := hs[:1]
	for _, h := range hs[1:] {
		last := &out[len(out)-1]
		if h.start < last.end {
			last.end = max(last.end, h.end)
			last.from, last.to = min(last.from, h.from), max(last.to, h.to)
			continue
		}
		out = append(out, h)
	}
	return out
}

// find appends p's matches in s, given where its hints were found in s
// before the last hits were masked.
func (p *pattern) find(s []byte, found []anchor, hs []hit) []hit {
	live := func(a anchor) bool { return bytes.IndexByte(s[a.at:a.at+a.len], '[') < 0 }
	if p.start == nil {
		if !slices.ContainsFunc(found, live) {
			return hs
		}
		for _, m := range p.re.FindAllSubmatchIndex(s, -1) {
			hs = p.take(s, m, hs)
		}
		return hs
	}
	// Run the anchored expression only where a match can start: at the
	// hints. Searching the whole text with an expression that starts
	// with \b or a character class is slow.
	var cands []int
	for _, a := range found {
		if !live(a) {
			continue
		}
		if st := p.start(s, a.at); st >= 0 {
			cands = append(cands, st)
		}
	}
	if len(p.hint) > 1 {
		slices.Sort(cands)
	}
	next, tried := 0, -1
	for _, st := range cands {
		if st < next || st == tried {
			continue
		}
		tried = st
		m := p.at.FindSubmatchIndex(s[st:])
		if m == nil {
			continue
		}
		for k := range m {
			if m[k] >= 0 {
				m[k] += st
			}
		}
		n := len(hs)
		if hs = p.take(s, m, hs); len(hs) > n {
			// The next match starts after this one. After a match
			// that was no secret (SecretName, literalSecret), later
			// candidates inside it still count.
			next = m[1]
		}
	}
	return hs
}

// take appends the hit of match m, unless it is not a secret after all.
func (p *pattern) take(s []byte, m []int, hs []hit) []hit {
	start, end := m[2*p.group], m[2*p.group+1]
	if start < 0 || bytes.HasPrefix(s[start:end], []byte("[REDACTED:")) {
		return hs
	}
	if p.kind == "assignment" && (!SecretName(string(s[m[2]:m[3]])) || !literalSecret(string(s[start:end]))) {
		return hs
	}
	return append(hs, hit{start: start, end: end, from: m[0], to: m[1], kind: p.kind})
}

// orphanEnd adds the end of a key block whose start was cut off (the tail
// of a capped output, a window of a stream): everything before its end
// line belongs to the key.
func orphanEnd(s []byte, hs []hit) []hit {
	for off := 0; ; {
		i := bytes.Index(s[off:], []byte("-----END"))
		if i < 0 {
			return hs
		}
		i += off
		off = i + 8
		if slices.ContainsFunc(hs, func(h hit) bool { return h.kind == "private-key" && h.start <= i && i < h.end }) {
			continue
		}
		if end := keyEndLine(s, i); end > 0 {
			return append(hs, hit{start: 0, end: end, from: 0, to: end, kind: "private-key"})
		}
	}
}

// keyEndLine returns where the end marker of a key block at i ends, or -1
// if the line at i is not one. The marker must be the whole line: code
// that handles keys names "-----END" and "PRIVATE KEY" in strings, and
// took for the tail of a key was redacted from its first line.
func keyEndLine(s []byte, i int) int {
	if i > 0 && s[i-1] != '\n' {
		return -1
	}
	l := s[i:]
	if j := bytes.IndexByte(l, '\n'); j >= 0 {
		l = l[:j]
	}
	l = bytes.TrimSuffix(l, []byte("\r"))
	var name []byte
	for _, tail := range []string{" PRIVATE KEY-----", " PRIVATE KEY BLOCK-----"} {
		if bytes.HasSuffix(l, []byte(tail)) {
			name = l[len("-----END") : len(l)-len(tail)]
		}
	}
	if name == nil {
		return -1
	}
	for _, c := range name {
		if !isUpper(c) && (c < '0' || c > '9') && c != ' ' {
			return -1
		}
	}
	return i + len(l)
}

// render replaces the hits in s with markers, keeping the line count.
func render(s string, hs []hit) string {
	if len(hs) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, h := range hs {
		b.WriteString(s[last:h.start])
		b.WriteString("[REDACTED:")
		b.WriteString(h.kind)
		b.WriteString("]")
		for range strings.Count(s[h.start:h.end], "\n") {
			b.WriteByte('\n')
		}
		last = h.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// mask replaces the bytes of hits in b by '[', which, like the marker that
// will replace them, is no part of a word or of a token. It masks in
// place: a copy of the text for each pattern that found something was
// most of the time redaction took on long texts with several secrets.
func mask(b []byte, hs []hit) {
	for _, h := range hs {
		for i := h.start; i < h.end; i++ {
			b[i] = '['
		}
	}
}

// literalSecret tells a secret value from code on the right of an
// assignment: a secret has letters and digits and is not a reference to
// another variable. Redacting code would keep the model from editing it.
func literalSecret(v string) bool {
	if strings.HasPrefix(v, "$") || strings.HasPrefix(v, "%") {
		return false
	}
	letter, digit := false, false
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		}
	}
	return letter && digit
}
