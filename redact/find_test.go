package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fragments build texts dense in near-secrets: hints, names, separators,
// token prefixes and bodies, for comparing the hint-anchored search with
// a plain scan of the whole text.
var fragments = []string{
	"key", "KEY", "Key", "token", "_TOKEN", "secret", "pass", "PASS", "passwd", "password", "passphrase", "auth", "Authorization: ", "bearer ", "Bearer ",
	"cookie", "private", "api", "db_", ".", "-", "_", "=", ":", ":=", " ", "  ", "\t", "\n", "\"", "'", "(", ")", "[", ",", ";", "$",
	"x", "gh", "ghp_", "gho_", "github_pat_", "xoxb-", "sk-", "sk-ant-", "sk-proj-", "sk_live_", "rk_test_", "AKIA", "ASIA", "AIza",
	"eyJ", "eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJI.eyJzdWIiOiJx.c2lnbmF0dXJl", "https://", "postgres://", "user:", "@", "/", "a1b2c3d4e5f6g7h8", "ABCDEFGHIJKLMNOP",
	"0123456789", "abcdefghij", "Zz9", "hooks.slack.com/services/", "through", "high",
}

func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(fragments[rng.IntN(len(fragments))])
	}
	return b.String()
}

// TestHintSearchFindsEveryMatch checks that running each pattern only
// where its hints say a match can start finds what trying it at every
// position where one could start finds.
func TestHintSearchFindsEveryMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	found := map[string]int{}
	for range 1000 {
		s := randomText(rng, 1+rng.IntN(40))
		anchored, _ := anchors().scan(s, len(patterns())+1)
		for k, p := range patterns() {
			if p.start == nil && p.match == nil {
				continue
			}
			got := p.find(&text{s: []byte(s)}, anchored[k], nil, 0)
			want := everyMatch(&p, s)
			found[p.kind] += len(want)
			if !slices.EqualFunc(got, want, sameHit) {
				t.Fatalf("%s in %q:\nhint search %v\nevery start %v", p.kind, s, got, want)
			}
		}
	}
	for _, p := range patterns() {
		if (p.start != nil || p.match != nil) && found[p.kind] == 0 {
			t.Errorf("no text had a %s: the comparison proves nothing for it", p.kind)
		}
	}
}

// everyMatch tries p's anchored expression, on its window, at every
// position where a match may start: where \b holds for the patterns that
// start with it (an assignment's name too), anywhere for URLs.
func everyMatch(p *pattern, str string) []hit {
	s := []byte(str)
	var hs []hit
	next := 0
	for i := 0; i < len(s); i++ {
		if i < next {
			continue
		}
		switch p.kind {
		case "url-password":
		case "assignment":
			if !wordBoundary(s, i) {
				continue
			}
		default:
			if i > 0 && isWord(s[i-1]) {
				continue
			}
		}
		m := p.matchAt(s, i, nil)
		if m == nil {
			continue
		}
		n := len(hs)
		if hs = p.take(&text{s: s}, m, hs); len(hs) > n {
			next = m[1]
		}
	}
	return hs
}

// sameHit reports whether two hits replace the same span, found the same
// way.
func sameHit(a, b hit) bool {
	return a.start == b.start && a.end == b.end && a.from == b.from && a.to == b.to && a.kind == b.kind && len(a.tails) == len(b.tails)
}
