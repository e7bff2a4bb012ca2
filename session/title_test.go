package session

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/store"
)

func TestTitles(t *testing.T) {
	long := strings.Repeat("é", 200)
	for _, c := range []struct{ name, got, want string }{
		{"first line", titleOf([]event.Content{{Type: "text", Text: "fix the bug\nin main.go"}}), "fix the bug"},
		{"long prompt", titleOf([]event.Content{{Type: "text", Text: long}}), strings.Repeat("é", 77) + "..."},
		{"exactly the bound", titleOf([]event.Content{{Type: "text", Text: long[:2*80]}}), long[:2*80]},
		{"fork", forkTitle(`say "hi" \ there`, "ses_x", " before prompt 2"), `Fork of say "hi" \ there before prompt 2`},
		{"fork of an untitled session", forkTitle("", "ses_x", " before prompt 1"), "Fork of ses_x before prompt 1"},
		{"fork of a long title", forkTitle(long, "ses_x", " before prompt 12"), "Fork of " + strings.Repeat("é", 52) + "... before prompt 12"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestForkTitlesDoNotGrow: forking a fork of a fork … keeps every title
// within the bound; quoting the parent's title doubled it at each level.
func TestForkTitlesDoNotGrow(t *testing.T) {
	title := `the "quoted" \ prompt`
	for depth := 1; depth <= 30; depth++ {
		title = forkTitle(title, "ses_x", " before prompt 2")
		if n := utf8.RuneCountInString(title); n > store.MaxTitle {
			t.Fatalf("depth %d: a title of %d characters, over %d: %.100q", depth, n, store.MaxTitle, title)
		}
		if strings.Contains(title, `\"`) {
			t.Fatalf("depth %d: the parent's title is quoted: %q", depth, title)
		}
	}
	if !strings.HasPrefix(title, "Fork of Fork of ") || !strings.HasSuffix(title, "... before prompt 2") {
		t.Fatalf("depth 30: %q", title)
	}
}
