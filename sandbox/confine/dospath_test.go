package confine

import "testing"

func TestDOSPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{`\\?\C:\Users\u\ws`, `C:\Users\u\ws`},
		{`\\?\z:\tmp`, `z:\tmp`},
		{`\\?\UNC\server\share\x`, `\\server\share\x`},
		{`C:\x`, `C:\x`},
		{`\\?\Volume{1b3b1146-4076-11e1-84aa-806e6f6e6963}\x`, ""},
		{`\\.\pipe\x`, ""},
		{`x\y`, ""},
	}
	for _, tt := range tests {
		got, ok := dosPath(tt.in)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("dosPath(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}
