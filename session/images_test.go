package session

import (
	"slices"
	"strings"
	"testing"
)

func TestImageNames(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("0b", 32)
	for _, c := range []struct {
		payload string
		want    []string
	}{
		{`{"content":[{"type":"text","text":"hi"}]}`, nil},
		{`{"content":[{"type":"image","uri":"image:sha256:` + a + `"}]}`, []string{a}},
		{`{"content":[{"uri":"image:sha256:` + b + `"},{"uri":"image:sha256:` + a + `"},{"uri":"image:sha256:` + b + `"}]}`, []string{b, a}},
		// Not a digest: too short, too long, upper case.
		{`{"uri":"image:sha256:abc"}`, nil},
		{`{"uri":"image:sha256:` + a + `a"}`, nil},
		{`{"uri":"image:sha256:` + strings.ToUpper(a) + `"}`, nil},
		{`image:sha256:`, nil},
	} {
		if got := imageNames([]byte(c.payload)); !slices.Equal(got, c.want) {
			t.Errorf("imageNames(%.60s…) = %v, want %v", c.payload, got, c.want)
		}
	}
}
