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
	// literals are exact secret values, longest first so that a value
	// containing another is replaced whole.
	literals []literal
}

type literal struct {
	value, kind string
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
	r.literals = append(r.literals, literal{value, kind})
	slices.SortStableFunc(r.literals, func(a, b literal) int { return len(b.value) - len(a.value) })
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
// (.env, .env.local, .env.production, ...). Missing files are fine.
func (r *Redactor) LoadDotEnvFiles(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || (n != ".env" && !strings.HasPrefix(n, ".env.")) {
			continue
		}
		if strings.HasSuffix(n, ".example") || strings.HasSuffix(n, ".sample") || strings.HasSuffix(n, ".template") {
			continue
		}
		data, err := os.ReadFile(dir + string(os.PathSeparator) + n)
		if err == nil && len(data) < 1<<20 {
			r.AddDotEnv(n, data)
		}
	}
}

// secretWords mark a variable name as holding a secret.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "PRIVATE", "SIGNATURE", "DSN", "CONNECTION_STRING", "DATABASE_URL"}

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
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

type pattern struct {
	kind string
	re   *regexp.Regexp
	// group is the submatch to replace; 0 replaces the whole match.
	group int
	// hint lists lower-case substrings one of which every match
	// contains, checked before the regular expression runs so that plain
	// output stays fast.
	hint []string
}

// patterns are compiled on first use: bridle re-executes itself as the
// first process of every sandboxed command, and that process never
// redacts, so package initialisation must stay cheap.
var patterns = sync.OnceValue(func() []pattern {
	return []pattern{
		{kind: "private-key", re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`), hint: []string{"private key"}},
		{kind: "aws-access-key", re: regexp.MustCompile(`\b(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`), hint: []string{"akia", "asia", "abia", "acca"}},
		{kind: "github-token", re: regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), hint: []string{"gh", "github_pat_"}},
		{kind: "slack-token", re: regexp.MustCompile(`\bxox[abposre]-[A-Za-z0-9-]{10,}`), hint: []string{"xox"}},
		{kind: "slack-webhook", re: regexp.MustCompile(`https://hooks\.slack\.com/(services|workflows)/[A-Za-z0-9/_-]+`), hint: []string{"hooks.slack.com"}},
		{kind: "anthropic-key", re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`), hint: []string{"sk-ant-"}},
		{kind: "openai-key", re: regexp.MustCompile(`\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), hint: []string{"sk-"}},
		{kind: "google-api-key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), hint: []string{"aiza"}},
		{kind: "stripe-key", re: regexp.MustCompile(`\b(sk|rk)_(live|test)_[0-9A-Za-z]{16,}`), hint: []string{"_live_", "_test_"}},
		{kind: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), hint: []string{"eyj"}},
		{kind: "bearer", re: regexp.MustCompile(`(?i)\b(?:authorization:\s*(?:bearer|basic|token)|bearer)\s+([A-Za-z0-9._~+/=-]{16,})`), group: 1, hint: []string{"bearer", "authorization"}},
		{kind: "url-password", re: regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^/\s@]{3,})@`), group: 1, hint: []string{"://"}},
		// NAME=value, NAME: "value", "name": "value" where NAME looks secret
		// and the value looks like a literal secret rather than code (see
		// literalSecret).
		{kind: "assignment", re: regexp.MustCompile(`(?i)\b([a-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|passphrase|credential|auth|cookie|private)[a-z0-9_.-]*)["']?\s*(?::=|[:=])\s*["']?([^\s'"()\[\]{}<>,;` + "`" + `]{8,})`), group: 2, hint: []string{"key", "token", "secret", "passw", "passphrase", "credential", "auth", "cookie", "private"}},
	}
})

// Redact returns s with every secret replaced. The number of lines is
// kept: a multi-line secret becomes a marker followed by empty lines.
func (r *Redactor) Redact(s string) string {
	if r != nil {
		for _, l := range r.literals {
			if strings.Contains(s, l.value) {
				s = strings.ReplaceAll(s, l.value, "[REDACTED:"+l.kind+"]")
			}
		}
	}
	lower := strings.ToLower(s)
	for _, p := range patterns() {
		if !containsAny(lower, p.hint) {
			continue
		}
		s = replace(s, p)
	}
	// The end of a key block whose start was cut off (the tail of a
	// capped output): everything before it belongs to the key.
	if i := strings.Index(s, "-----END"); i >= 0 && strings.Contains(s[i:], "PRIVATE KEY") {
		if j := strings.Index(s[i+8:], "-----"); j >= 0 {
			end := i + 8 + j + 5
			s = "[REDACTED:private-key]" + strings.Repeat("\n", strings.Count(s[:end], "\n")) + s[end:]
		}
	}
	return s
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

func containsAny(s string, subs []string) bool {
	for _, h := range subs {
		if strings.Contains(s, h) {
			return true
		}
	}
	return false
}

func replace(s string, p pattern) string {
	marker := "[REDACTED:" + p.kind + "]"
	if p.group == 0 {
		// Keep the line count, so line numbers around a redacted key
		// block stay right.
		return p.re.ReplaceAllStringFunc(s, func(m string) string {
			return marker + strings.Repeat("\n", strings.Count(m, "\n"))
		})
	}
	var b strings.Builder
	last := 0
	for _, m := range p.re.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[2*p.group], m[2*p.group+1]
		if start < 0 || strings.HasPrefix(s[start:end], "[REDACTED:") {
			continue
		}
		if p.kind == "assignment" && (!SecretName(s[m[2]:m[3]]) || !literalSecret(s[start:end])) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(marker)
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
