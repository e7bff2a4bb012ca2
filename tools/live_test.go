package tools

import (
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/redact"
)

func TestTailOf(t *testing.T) {
	tests := []struct {
		name, s string
		n, max  int
		want    string
	}{
		{"all of a short output", "a\nb\nc\n", 40, 100, "a\nb\nc"},
		{"the last n lines", "a\nb\nc\nd\n", 2, 100, "c\nd"},
		{"whole lines within max", "aaaa\nbb\ncc\n", 40, 6, "bb\ncc"},
		{"a last line longer than max: its end", "x\n" + strings.Repeat("y", 10) + "é", 40, 5, "yyyé"},
		{"empty", "", 40, 100, ""},
		{"one line", "only", 40, 100, "only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tailOf(tt.s, tt.n, tt.max); got != tt.want {
				t.Errorf("tailOf(%q, %d, %d) = %q, want %q", tt.s, tt.n, tt.max, got, tt.want)
			}
		})
	}
}

// The live tail keeps only the output's end, redacts it whole (a key block
// whose start scrolled out of the lines shown is still found), and says
// when nothing changed.
func TestLiveTailRedactsWhatItShows(t *testing.T) {
	env := &Env{Redactor: redact.New(nil)}
	l := &liveTail{}
	if _, ok := l.snapshot(env); ok {
		t.Fatal("a tail with no output changed")
	}
	l.Write([]byte(strings.Repeat("noise line\n", 10_000))) // more than the window
	l.Write([]byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"))
	for range 60 {
		l.Write([]byte("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"))
	}
	if len(l.buf) > liveWindow {
		t.Fatalf("the tail keeps %d bytes, over its %d window", len(l.buf), liveWindow)
	}
	text, ok := l.snapshot(env)
	if !ok || strings.Contains(text, "b3BlbnNzaC1rZXkt") || strings.Count(text, "\n") >= liveLines {
		t.Fatalf("snapshot (changed %v):\n%s", ok, text)
	}
	if _, ok := l.snapshot(env); ok {
		t.Fatal("a second snapshot with no new output changed")
	}
}
