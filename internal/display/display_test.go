package display

import (
	"strings"
	"testing"
)

func TestLabelAndText(t *testing.T) {
	for _, c := range []struct {
		name, in, label, text string
	}{
		{"plain", "Read main.go", "Read main.go", "Read main.go"},
		{"unicode", "Édition — 読む ✓", "Édition — 読む ✓", "Édition — 読む ✓"},
		{"ESC alone", "a\x1b", "a", "a"},
		{"two-byte escape", "a\x1b7b\x1bcc", "abc", "abc"},
		{"CSI colour", "\x1b[31mred\x1b[0m", "red", "red"},
		{"CSI cursor", "ok\x1b[2K\x1b[1Afake", "okfake", "okfake"},
		{"OSC title, BEL", "\x1b]0;pwned\x07Read a", "0;pwnedRead a", "0;pwnedRead a"},
		{"OSC 52 clipboard, ST", "\x1b]52;c;cm0gLXJmIH4=\x1b\\x", "52;c;cm0gLXJmIH4=x", "52;c;cm0gLXJmIH4=x"},
		{"BEL", "ding\x07", "ding", "ding"},
		{"NUL", "a\x00b", "ab", "ab"},
		{"backspace", "rm -rf ~\x08\x08\x08\x08ls", "rm -rf ~ls", "rm -rf ~ls"},
		{"DEL", "a\x7fb", "ab", "ab"},
		{"CR alone", "rm -rf ~\rls     ", "rm -rf ~ ls", "rm -rf ~\nls     "},
		{"CRLF", "one\r\ntwo", "one two", "one\ntwo"},
		{"newline, tab", "one\n\ttwo", "one  two", "one\n\ttwo"},
		{"C1 CSI", "a\u009b31mb", "a31mb", "a31mb"},
		{"NEL", "a\u0085b", "a b", "a\nb"},
		{"line separator", "a\u2028b\u2029c", "a b c", "a\nb\nc"},
		{"RLO", "invoice_\u202Efdp.exe", "invoice_fdp.exe", "invoice_fdp.exe"},
		{"isolates", "\u2066a\u2067b\u2068c\u2069", "abc", "abc"},
		{"marks", "a\u200eb\u200fc\u061cd", "abcd", "a\u200eb\u200fc\u061cd"},
		{"invalid UTF-8", "a\xffb", "a\ufffdb", "a\ufffdb"},
		{"CSI cut short", "a\x1b[31", "a", "a"},
		{"ESC before non-ASCII", "a\x1bé", "aé", "aé"},
		{"label ends", "  \n title \r\n", "title", "  \n title \n"},
	} {
		if got := Label(c.in); got != c.label {
			t.Errorf("%s: Label(%q) = %q, want %q", c.name, c.in, got, c.label)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("%s: Text(%q) = %q, want %q", c.name, c.in, got, c.text)
		}
	}
}

// TestNothingUnsafeLeft: whatever the input, no control character but a
// body's newline and tab, and no bidirectional override, comes out.
func TestNothingUnsafeLeft(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		all.WriteRune(r)
		all.WriteString("x")
	}
	for name, out := range map[string]string{"Label": Label(all.String()), "Text": Text(all.String())} {
		for _, r := range out {
			bad := r < 0x20 && !(name == "Text" && (r == '\n' || r == '\t')) || r == 0x7f || r >= 0x80 && r <= 0x9f ||
				r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x2028 || r == 0x2029
			if bad {
				t.Errorf("%s kept %U", name, r)
			}
		}
	}
}

func BenchmarkTextClean(b *testing.B) {
	s := strings.Repeat("The quick brown fox — ünïcödé\n", 4)
	b.ReportAllocs()
	for b.Loop() {
		Text(s)
	}
}
