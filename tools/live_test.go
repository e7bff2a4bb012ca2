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
	if len(l.out.buf) > liveWindow {
		t.Fatalf("the tail keeps %d bytes, over its %d window", len(l.out.buf), liveWindow)
	}
	text, ok := l.snapshot(env)
	if !ok || strings.Contains(text, "b3BlbnNzaC1rZXkt") || strings.Count(text, "\n") >= liveLines {
		t.Fatalf("snapshot (changed %v):\n%s", ok, text)
	}
	if _, ok := l.snapshot(env); ok {
		t.Fatal("a second snapshot with no new output changed")
	}
}

// TestLiveTailHoldsWhatCouldBeASecret: the line a command has not ended
// shows only what can no longer become part of a secret: a value written
// a character at a time shows no prefix of it, nor does a key block's
// line still being written.
func TestLiveTailHoldsWhatCouldBeASecret(t *testing.T) {
	const value = "Zq9xLmP4vR7tK2wB"
	r := redact.New(nil)
	r.AddDotEnv(".env", []byte("DB_PASSWORD="+value+"\n"))
	env := &Env{Redactor: r}
	tests := []struct {
		name   string
		writes []string
		want   string // what the last snapshot holds
		absent string // what no snapshot holds
	}{
		{"a value written slowly", append([]string{"starting\npw: "}, strings.Split(value+"\n", "")...), "pw: [REDACTED:", value[:4]},
		{"a key block's line being written", []string{"-----BEGIN RSA PRIVATE KEY-----\n", "MIIEowIBAAK", "CQEAx1y2b3c4d5e6f7g8h9"}, "[REDACTED:private-key]", "MIIEow"},
		{"words are shown as they come", []string{"Compiling ", "pack"}, "Compiling pack", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &liveTail{}
			var text string
			for _, w := range tt.writes {
				l.Write([]byte(w))
				text, _ = l.snapshot(env)
				if tt.absent != "" && strings.Contains(text, tt.absent) {
					t.Fatalf("after %q the tail shows %q", w, text)
				}
			}
			if !strings.Contains(text, tt.want) {
				t.Errorf("the last tail is %q, want it to hold %q", text, tt.want)
			}
		})
	}
}
