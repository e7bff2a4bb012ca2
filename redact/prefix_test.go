package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestOpeningsKnowEveryBeginning: every beginning of every match of a
// pattern, in texts dense in near-secrets, is known to begin one; and
// where a contextual match's value has begun, its start is known no
// later than it is. A beginning not known would be shown before the
// secret it begins.
func TestOpeningsKnowEveryBeginning(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ps, os := patterns(), openings()
	found := map[string]int{}
	texts := []string{ghToken, awsKey, slack, openai, anthropic, jwt, pemKey, "https://hooks.slack.com/services/T000/B000/XXXX",
		"sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "AIza" + strings.Repeat("Sy9", 12)}
	for range 300 {
		texts = append(texts, randomText(rng, 1+rng.IntN(40)))
	}
	for _, s := range texts {
		for k, p := range ps {
			for _, m := range p.re.FindAllStringSubmatchIndex(s, -1) {
				found[p.kind]++
				match := s[m[0]:m[1]]
				for n := 1; n <= len(match); n++ {
					if !os[k].could(match[:n], nil) {
						t.Fatalf("%s: %q begins the match %q but is not known to", p.kind, match[:n], match)
					}
					if os[k].head == nil {
						continue
					}
					value := m[2*p.group] - m[0]
					if value >= 0 && n > value {
						if v := os[k].valueFrom(match[:n], nil); v < 0 || v > value {
							t.Fatalf("%s: in %q the value starts at %d, known at %d", p.kind, match[:n], value, v)
						}
					}
				}
			}
		}
	}
	for _, p := range ps {
		if found[p.kind] == 0 {
			t.Errorf("no text had a %s: the test proves nothing for it", p.kind)
		}
	}
}

// TestOpeningsKnowWhatBeginsNothing: what can begin no match is known
// not to, or a Chat would hold back ordinary words.
func TestOpeningsKnowWhatBeginsNothing(t *testing.T) {
	ps, os := patterns(), openings()
	nothing := map[string][]string{
		"github-token":   {"ghp_abc def", "gh-pages", "Hello"},
		"anthropic-key":  {"sk-ant-ok ", "sk-and"},
		"aws-access-key": {"AKIA-", "akia1234", "AKIAB0000000000000000X"},
		"private-key":    {"-----BEGIN CERTIFICATE-----", "----- BEGIN"},
		"jwt":            {"eyJhbGci eyJ", "eyj"},
		"bearer":         {"Bearer short ok", "Bearer\n\n:"},
		"slack-token":    {"xo ", "xoxz"},
		"url-password":   {"http://x/y", "mailto:a@b"},
		"assignment":     {"key := p.parseKey()", `token = "${TOKEN}"x`},
	}
	for k, p := range ps {
		for _, s := range nothing[p.kind] {
			if os[k].could(s, nil) {
				t.Errorf("%s: %q is taken to begin a match", p.kind, s)
			}
		}
		if os[k].head == nil {
			continue
		}
		for _, s := range []string{"password: ", "Authorization: Bearer   ", "postgres://user:"} {
			if os[k].could(s, nil) && os[k].valueFrom(s, nil) >= 0 {
				t.Errorf("%s: the value is taken to have begun in %q", p.kind, s)
			}
		}
	}
}

// TestTokenFormatsStartAtAHint: a pattern that replaces its whole match
// starts every match with one of its hints: a Chat looks for a match
// still to come only from a hint (or its first letters) on.
func TestTokenFormatsStartAtAHint(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	texts := []string{ghToken, "github_pat_" + strings.Repeat("A1_", 12), awsKey, slack, openai, anthropic, jwt, pemKey,
		"https://hooks.slack.com/services/T000/B000/XXXX", "rk_test_" + "4eC39HqLyjWDarjtT1zdp7dc", "AIza" + strings.Repeat("Sy9", 12)}
	for range 1000 {
		texts = append(texts, randomText(rng, 1+rng.IntN(40)))
	}
	for _, p := range patterns() {
		if p.group != 0 {
			continue
		}
		for _, s := range texts {
			for _, m := range p.re.FindAllStringIndex(s, -1) {
				if !startsWithAny(strings.ToLower(s[m[0]:m[1]]), p.hint) {
					t.Errorf("%s: the match %q starts with none of its hints %q", p.kind, s[m[0]:m[1]], p.hint)
				}
			}
		}
	}
}

func startsWithAny(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func TestEscapeBegins(t *testing.T) {
	for s, want := range map[string]int{
		"100%": 3, "enc %4": 4, "enc %41": -1, "%4g": -1, `json "\u00`: 6, `\u0041`: -1, `\x`: 0, `\x4`: 0, `\x41`: -1, `a\`: 1,
		"html &": 5, "html &#": 5, "html &#1": 5, "&#103;": -1, "&#x1F60": 0, "&#x1F600;": -1, "&#1234567890": -1,
		"password=": 8, "a=3": 1, "a=3D": -1, "a=3d": -1, "a=\r": 1, "a=\r\n": -1, "a=g": -1, "a=4": -1, "x=41": -1,
		"zw \xe2\x80": 3, "caf\xc3": 3, "café": -1, "Hello": -1, "": -1,
	} {
		if got := escapeBegins(s); got != want {
			t.Errorf("escapeBegins(%q) = %d, want %d", s, got, want)
		}
	}
}
