package workspace

import "testing"

func TestIgnore(t *testing.T) {
	ig := (*Ignore)(nil).With("", []byte("# comment\n*.log\n/build\nnode_modules/\n!keep.log\ndocs/**/*.tmp\n\\#hash\n"))
	ig = ig.With("sub", []byte("local.txt\n/only-here\n"))
	cases := []struct {
		path string
		dir  bool
		want bool
	}{
		{"a.log", false, true},
		{"deep/x/a.log", false, true},
		{"keep.log", false, false},
		{"build", true, true},
		{"src/build", true, false},
		{"node_modules", true, true},
		{"node_modules", false, false},
		{"x/node_modules", true, true},
		{"docs/a/b/c.tmp", false, true},
		{"docs/c.tmp", false, true},
		{"other/c.tmp", false, false},
		{"#hash", false, true},
		{"sub/local.txt", false, true},
		{"sub/x/local.txt", false, true},
		{"local.txt", false, false},
		{"sub/only-here", false, true},
		{"sub/x/only-here", false, false},
		{"main.go", false, false},
		{"a{b}.log", false, true},
	}
	for _, c := range cases {
		if got := ig.Match(c.path, c.dir); got != c.want {
			t.Errorf("Match(%q, dir=%v) = %v, want %v", c.path, c.dir, got, c.want)
		}
	}
}
