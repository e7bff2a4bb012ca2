// Package redact removes secrets from text before it is persisted or sent
// anywhere: the values of secret-looking environment variables and .env
// files, private key blocks, and common token formats.
package redact

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"
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
	// work, if set, counts what redaction looks at (meter).
	work *meter
}

// meter counts the bytes redaction looks at: scanned by the anchor
// table, given to regular expressions, compared with known values,
// decoded. Tests set one to bound the work on hostile texts without
// timing it.
type meter struct{ n atomic.Int64 }

func (m *meter) add(n int) {
	if m != nil {
		m.n.Add(int64(n))
	}
}

func (m *meter) count() int64 { return m.n.Load() }

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

// secretWordBytes are secretWords, for bytes.Index.
var secretWordBytes = func() [][]byte {
	out := make([][]byte, len(secretWords))
	for i, w := range secretWords {
		out[i] = []byte(w)
	}
	return out
}()

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// secretSegments mark a name as holding a secret only as one of its words
// (DB_PASS, adminPass), not inside another (PASSTHROUGH, BYPASS, COMPASS).
var secretSegments = []string{"PASS"}

// notSecret are names that contain a secret word but hold none.
var notSecret = map[string]bool{"KEYTIMEOUT": true, "SSH_AUTH_SOCK": true, "XDG_SESSION_ID": true, "XDG_SESSION_TYPE": true,
	"XDG_SESSION_CLASS": true, "XDG_SESSION_DESKTOP": true, "DESKTOP_SESSION": true, "SESSION_MANAGER": true, "GPG_KEY_ID": true}

// SecretName reports whether an environment variable or assignment name
// looks like it holds a secret.
func SecretName(name string) bool {
	// Asked of every name before "=" in a text: an ASCII one is put in
	// upper case without allocating.
	var buf [320]byte
	var n []byte
	if len(name) <= len(buf) && isASCII(name) {
		n = buf[:len(name)]
		for i := range len(name) {
			n[i] = upperByte(name[i])
		}
	} else {
		n = []byte(strings.ToUpper(name))
	}
	if notSecret[string(n)] {
		return false
	}
	for _, w := range secretWordBytes {
		for off := 0; ; {
			i := bytes.Index(n[off:], w)
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

// A hit is one secret found in a text.
type hit struct {
	// start and end bound what is replaced.
	start, end int
	// from and to bound the whole match that found it, context included
	// (an assignment's name): text cut inside it might not be recognised
	// as a secret.
	from, to int
	kind     string
	// stage is when it was found: the known values (literalStage), the
	// decoded text (decodedStage), then each pattern's (pattern.stage),
	// then a key block's end line (orphanStage). Each stage looks at the
	// text with the hits of those before it masked. inner is, for a hit
	// found decoded, its stage in the decoded text.
	stage, inner int
	// tails say how a match that reaches the end of the text may go on
	// (a key block, a known value): a Chat that passes it on before it
	// ends swallows what continues it (see span).
	tails []tail
}

// The first stages of a redaction (hit.stage).
const (
	literalStage = iota
	decodedStage
	// firstPatternStage is the first pattern's.
	firstPatternStage
)

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
	t    *literalTable
	work *meter
	// prior are hits found in the text before (a Chat's context): they
	// are masked, each at its stage, as if found again.
	prior []hit
	// midLine says the text does not start a line: it is the end of a
	// longer one (a Chat's context), whose start is not known.
	midLine bool
	// fixed is where the text a Chat passed on ends: what it passed on is
	// final, and its hits are in prior. A hit that would start before
	// fixed and is not one of those is not taken (seen without the text
	// before the context, the context's start may look like a word's or
	// a name's start where it is not).
	fixed int
	// dec, for a decoded text, maps it to the text it came from
	// (decoded): only what an escape makes a secret is taken from it.
	// escapes are where its escapes are (decoding.escapes).
	dec     decoding
	escapes []int
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
	w := r.meter()
	w.add(len(s))
	return scanned{t: t, work: w, found: found, state: state}
}

// meter returns r's meter, if it has one.
func (r *Redactor) meter() *meter {
	if r == nil {
		return nil
	}
	return r.work
}

// within copies into sc what it inherits from outer, the scan of a text
// that s is the start of: what a Chat knows of the text before it.
func (sc *scanned) within(outer scanned) {
	sc.prior, sc.midLine, sc.fixed = outer.prior, outer.midLine, outer.fixed
}

// escapeNear reports whether, in a decoded text, an escape is between
// from and to: elsewhere, nothing found is taken (takes), and a pattern
// need not look.
func (sc *scanned) escapeNear(from, to int) bool {
	if sc.dec == nil {
		return true
	}
	k, _ := slices.BinarySearch(sc.escapes, from)
	return k < len(sc.escapes) && sc.escapes[k] <= to
}

// takes reports whether a hit from from to to, replacing from start, is
// taken: a new one (not before fixed) and, in a decoded text, one that
// an escape makes.
func (sc *scanned) takes(start, from, to int) bool {
	return start >= sc.fixed && (sc.dec == nil || sc.dec.escaped(from, to))
}

func (r *Redactor) hitsDepth(s string, prompt bool, depth int) []hit {
	return r.hitsOf(s, r.scan(s), prompt, depth)
}

// hitsOf is hitsDepth with the scan of s done.
func (r *Redactor) hitsOf(s string, sc scanned, prompt bool, depth int) []hit {
	return merge(r.stagedHits(s, sc, prompt, depth))
}

// stagedHits returns the hits of each stage in s, before they are
// merged: a Chat keeps them to mask its context as each stage saw it.
func (r *Redactor) stagedHits(s string, sc scanned, prompt bool, depth int) []hit {
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
		for _, h := range r.literalHits(s, t, found[len(ps)+1:], sc.work) {
			if sc.takes(h.start, h.from, h.to) {
				hs = append(hs, h)
			}
		}
	}
	escapes := found[len(ps)]
	found = found[:len(ps)]
	if len(hs) == 0 && len(escapes) == 0 && !slices.ContainsFunc(found, func(a []anchor) bool { return len(a) > 0 }) && !strings.Contains(s, "-----END") {
		return nil // most output: no copy of it is needed
	}
	b := []byte(s)
	mask(b, hs)
	mask(b, stageOf(sc.prior, literalStage))
	// Text that is escaped or encoded (percent, JSON, HTML escapes,
	// zero-width characters) is decoded and looked at again, with the
	// known values found masked, as the patterns see it.
	var dec []hit
	for _, h := range r.decodedHits(s, escapes, sc, hs, prompt, depth) {
		// In a decoded text, what its own decoding found is taken as
		// the rest: as written, it must be short enough (maxDecoded).
		if sc.takes(h.start, h.from, h.to) {
			dec = append(dec, h)
		}
	}
	mask(b, dec)
	mask(b, stageOf(sc.prior, decodedStage))
	hs = append(hs, dec...)
	t2 := &text{s: b, work: sc.work, sc: &sc}
	for k, p := range ps {
		if prompt && p.contextual {
			continue
		}
		n, next := len(hs), 0
		prior := stageOf(sc.prior, p.stage)
		for _, h := range prior {
			next = max(next, h.to)
		}
		t2.reset()
		hs = p.find(t2, found[k], hs, next)
		mask(b, hs[n:])
		mask(b, prior)
	}
	// A key block's tail is looked for in the text as written.
	if !prompt && depth == 0 {
		for _, h := range orphanEnd(b, sc.midLine) {
			if sc.takes(h.start, h.from, h.to) {
				hs = append(hs, h)
			}
		}
	}
	return hs
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
			last.tails = append(last.tails, h.tails...)
			last.stage = min(last.stage, h.stage)
			continue
		}
		out = append(out, h)
	}
	return out
}

// stageOf returns the hits of hs found at stage.
func stageOf(hs []hit, stage int) []hit {
	var out []hit
	for _, h := range hs {
		if h.stage == stage {
			out = append(out, h)
		}
	}
	return out
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
		// A hit of a longer text (a Chat's, of the text before an escape
		// begun) is masked as far as b goes.
		for i := max(h.start, 0); i < min(h.end, len(b)); i++ {
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
