package tools

import (
	"testing"

	"github.com/bridle-dev/bridle/lsp"
)

func te(sl, sc, el, ec int, text string) lsp.TextEdit {
	return lsp.TextEdit{StartLine: sl, StartCol16: sc, EndLine: el, EndCol16: ec, NewText: text}
}

// TestApplyEdits: a server's edits, in UTF-16 columns, land on the right
// bytes; edits past the text or overlapping are refused.
func TestApplyEdits(t *testing.T) {
	for _, c := range []struct {
		name, text string
		edits      []lsp.TextEdit
		want, err  string
	}{
		{"one", "func add() {}\n", []lsp.TextEdit{te(0, 5, 0, 8, "sum")}, "func sum() {}\n", ""},
		{"two lines, out of order", "a := add\nb := add\n",
			[]lsp.TextEdit{te(1, 5, 1, 8, "sum"), te(0, 5, 0, 8, "sum")}, "a := sum\nb := sum\n", ""},
		{"after a wide character", "s := \"é😀\" + add\n", []lsp.TextEdit{te(0, 13, 0, 16, "sum")}, "s := \"é😀\" + sum\n", ""},
		{"insertion", "x\n", []lsp.TextEdit{te(0, 1, 0, 1, "y")}, "xy\n", ""},
		{"past the end", "x\n", []lsp.TextEdit{te(5, 0, 5, 1, "y")}, "", "line 6 is past the end"},
		{"past a line's end", "x\ny\n", []lsp.TextEdit{te(0, 3, 0, 4, "y")}, "", "column 4 of line 1 is past its end"},
		{"overlapping", "abcdef\n", []lsp.TextEdit{te(0, 0, 0, 3, "x"), te(0, 2, 0, 4, "y")}, "", "two of its edits overlap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := applyEdits([]byte(c.text), c.edits)
			switch {
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Errorf("error %v, want %q", err, c.err)
			case c.err == "" && err != nil:
				t.Errorf("error %v", err)
			case c.err == "" && string(got) != c.want:
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
