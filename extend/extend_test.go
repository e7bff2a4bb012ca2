package extend

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"pdf-processing", true},
		{"a", true},
		{"v2-tool", true},
		{"", false},
		{"PDF-Processing", false},
		{"-pdf", false},
		{"pdf-", false},
		{"pdf--processing", false},
		{"pdf processing", false},
		{"pdf_processing", false},
		{"é", false},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestParseSkill(t *testing.T) {
	for _, tc := range []struct {
		name, file, body, err string
	}{
		{"plain", "---\nname: x\ndescription: Does x.\n---\n# X\n", "# X\n", ""},
		{"crlf and folded", "---\r\nname: x\r\ndescription: >\r\n  Does\r\n  x.\r\n---\r\nbody", "body", ""},
		{"metadata", "---\nname: x\ndescription: d\nmetadata:\n  version: 1.0\n---\n", "", ""},
		{"no front matter", "# X\n", "", "no front matter"},
		{"unclosed", "---\nname: x\n", "", "no closing"},
		{"not yaml", "---\nname: [x\n---\n", "", "not YAML"},
		{"no description", "---\nname: x\n---\n", "", "description is empty"},
		{"long description", "---\nname: x\ndescription: " + strings.Repeat("d", 1025) + "\n---\n", "", "over 1024"},
		{"other folder", "---\nname: y\ndescription: d\n---\n", "", `not its folder's name "x"`},
		{"bad name", "---\nname: X\ndescription: d\n---\n", "", "lowercase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, body, err := parseSkill([]byte(tc.file), "x")
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if err == nil && body != tc.body {
				t.Errorf("body = %q, want %q", body, tc.body)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	for _, tc := range []struct{ body, args, want string }{
		{"Review $ARGUMENTS.", "x", "Review x."},
		{"A $ARGUMENTS and $ARGUMENTS", "y", "A y and y"},
		{"Review.", "", "Review."},
		{"Review.", "this", "Review.\n\nthis"},
		{"Review $ARGUMENTS.", "", "Review ."},
	} {
		if got := (Command{Body: tc.body}).Expand(tc.args); got != tc.want {
			t.Errorf("Expand(%q, %q) = %q, want %q", tc.body, tc.args, got, tc.want)
		}
	}
}

func TestReserved(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "commands", "rewind.md"), "x")
	p := Standard(dir, "", "", nil, nil)
	p.Reserved = []string{"rewind"}
	s := Find(p)
	if len(s.Commands) != 0 || len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "bridle's own") {
		t.Errorf("got %+v", s)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkMicroFindExtensions (micro: extend.Find alone, no session) reads 20 project skills and 10 commands, as a session
// does at each prompt.
func BenchmarkMicroFindExtensions(b *testing.B) {
	proj := b.TempDir()
	files := map[string]string{}
	for i := range 20 {
		name := fmt.Sprintf("skill-%d", i)
		files[".agents/skills/"+name+"/SKILL.md"] = "---\nname: " + name + "\ndescription: Does " + name + " when asked.\n---\n" + strings.Repeat("A line of the body.\n", 100)
	}
	for i := range 10 {
		files[fmt.Sprintf(".bridle/commands/cmd%d.md", i)] = "---\ndescription: d\n---\nDo $ARGUMENTS.\n"
	}
	testfs.WriteTree(b, proj, files)
	p := Standard("", "", proj, nil, nil)
	b.ReportAllocs()
	for b.Loop() {
		if s := Find(p); len(s.Skills) != 20 || len(s.Commands) != 10 {
			b.Fatalf("found %d skills, %d commands: %v", len(s.Skills), len(s.Commands), s.Problems)
		}
	}
}
