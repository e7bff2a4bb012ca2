package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
)

func TestReadFilePaging(t *testing.T) {
	env := testEnv(t)
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	testfs.Write(t, filepath.Join(env.Root.Dir(), "f.txt"), b.String()+strings.Repeat("x", 5000)+"\n")
	rf := ReadFile{MaxLines: 10}
	res := call(t, rf, env, `{"path": "f.txt"}`)
	if !strings.Contains(res.Output, "     1\tline 1\n") || !strings.Contains(res.Output, "read on with offset 11") || strings.Contains(res.Output, "line 11") {
		t.Fatalf("first page: %q", res.Output)
	}
	res = call(t, rf, env, `{"path": "f.txt", "offset": 29}`)
	if !strings.Contains(res.Output, "    31\txxxx") || !strings.Contains(res.Output, "[…line cut]") {
		t.Fatalf("last page: %q", res.Output)
	}
	if res.Locations[0].Path != filepath.Join(env.Root.Dir(), "f.txt") || res.Locations[0].Line != 29 {
		t.Fatalf("location %+v", res.Locations)
	}
	testfs.Write(t, filepath.Join(env.Root.Dir(), "bin"), "\x00\x01\x02")
	if res := call(t, rf, env, `{"path": "bin"}`); !res.IsError || !strings.Contains(res.Output, "binary") {
		t.Fatalf("binary: %q", res.Output)
	}
	if res := call(t, rf, env, `{"path": "f.txt", "offset": 99}`); !res.IsError || !strings.Contains(res.Output, "past the end") {
		t.Fatalf("offset past end: %q", res.Output)
	}
}

func TestEditFile(t *testing.T) {
	env := testEnv(t)
	path := filepath.Join(env.Root.Dir(), "a.go")
	testfs.Write(t, path, "package a\n\nfunc A() int { return 1 }\nfunc B() int { return 1 }\n")
	ed := EditFile{}
	for _, c := range []struct{ input, want string }{
		{`{"path": "a.go", "old_string": "return 1", "new_string": "return 2"}`, "occurs 2 times in a.go (lines 3, 4)"},
		{`{"path": "a.go", "old_string": "return 3", "new_string": "x"}`, "was not found"},
		{`{"path": "a.go", "old_string": "func  A()", "new_string": "x"}`, "different whitespace"},
		{`{"path": "a.go", "old_string": "[REDACTED:github-token]", "new_string": "x"}`, "redaction marker"},
		{`{"path": "a.go", "old_string": "same", "new_string": "same"}`, "the same"},
		{`{"path": "new.go", "old_string": "a", "new_string": "b"}`, "use write_file"},
	} {
		res := call(t, ed, env, c.input)
		if !res.IsError || !strings.Contains(res.Output, c.want) {
			t.Errorf("%s: %q, want %q", c.input, res.Output, c.want)
		}
	}
	input := json.RawMessage(`{"path": "a.go", "old_string": "func B() int { return 1 }", "new_string": "func B() int { return 2 }"}`)
	plan, err := ed.Plan(context.Background(), env, input)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := HashFile(context.Background(), env, "a.go")
	if plan.Before != before || plan.After == before || plan.Path != path {
		t.Fatalf("plan %+v, file hash %s", plan, before)
	}
	p, err := ed.Preview(context.Background(), env, input)
	if err != nil || p.Diff == nil || p.Locations[0].Line != 4 {
		t.Fatalf("preview %+v %v", p, err)
	}
	res := ed.Run(t.Context(), env, input)
	if res.IsError || res.Diff == nil || *res.Diff.OldText == res.Diff.NewText || !strings.Contains(res.Output, "-func B() int { return 1 }\n+func B() int { return 2 }") {
		t.Fatalf("edit: %+v", res)
	}
	after, _ := HashFile(context.Background(), env, "a.go")
	if after != plan.After {
		t.Fatalf("hash after %s, plan said %s", after, plan.After)
	}
	// Replaying the same edit is refused (its old text is gone) and the
	// hash tells a restart it already landed.
	if res := ed.Run(t.Context(), env, input); !res.IsError {
		t.Fatal("edit applied twice")
	}
	res = call(t, ed, env, `{"path": "a.go", "old_string": "return", "new_string": "return ", "replace_all": true}`)
	if res.IsError || !strings.Contains(res.Output, "2 replacement(s)") {
		t.Fatalf("replace_all: %q", res.Output)
	}
}

func TestWriteFile(t *testing.T) {
	env := testEnv(t)
	wf := WriteFile{}
	input := json.RawMessage(`{"path": "sub/dir/new.txt", "content": "one\ntwo\n"}`)
	plan, err := wf.Plan(context.Background(), env, input)
	if err != nil || plan.Before != "" || plan.After != Hash([]byte("one\ntwo\n")) {
		t.Fatalf("plan %+v %v", plan, err)
	}
	res := wf.Run(t.Context(), env, input)
	if res.IsError || res.Diff.OldText != nil || !strings.Contains(res.Output, "Created sub/dir/new.txt (2 lines") {
		t.Fatalf("create: %+v", res)
	}
	path := filepath.Join(env.Root.Dir(), "sub/dir/new.txt")
	os.Chmod(path, 0o750)
	res = call(t, wf, env, `{"path": "sub/dir/new.txt", "content": "one\nTWO\n"}`)
	if res.IsError || res.Diff.OldText == nil || !strings.Contains(res.Output, "-two\n+TWO") {
		t.Fatalf("overwrite: %+v", res)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o750 {
		t.Fatalf("mode not kept: %v", fi.Mode())
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestGrepAndGlobRespectGitignore(t *testing.T) {
	env := testEnv(t)
	ws := env.Root.Dir()
	testfs.Write(t, filepath.Join(ws, ".gitignore"), "build/\n*.log\n")
	testfs.Write(t, filepath.Join(ws, "src", ".gitignore"), "gen.go\n")
	testfs.Write(t, filepath.Join(ws, "src", "a.go"), "package src\n// TODO one\n// TODO two\n")
	testfs.Write(t, filepath.Join(ws, "src", "gen.go"), "// TODO generated\n")
	testfs.Write(t, filepath.Join(ws, "build", "out.go"), "// TODO built\n")
	testfs.Write(t, filepath.Join(ws, "debug.log"), "TODO logged\n")
	testfs.Write(t, filepath.Join(ws, ".git", "HEAD"), "TODO git\n")
	testfs.Write(t, filepath.Join(ws, "img.bin"), "TODO\x00binary")
	res := call(t, byName("grep"), env, `{"pattern": "TODO"}`)
	if res.IsError || !strings.HasPrefix(res.Output, "2 matches in 1 files (skipped files: 1 binary)") || !strings.Contains(res.Output, "src/a.go:2:// TODO one") {
		t.Fatalf("grep: %q", res.Output)
	}
	for _, bad := range []string{"generated", "built", "logged", "git"} {
		if strings.Contains(res.Output, bad) {
			t.Fatalf("ignored file searched (%s): %q", bad, res.Output)
		}
	}
	// A .gitignore above the searched directory still applies.
	res = call(t, byName("grep"), env, `{"pattern": "TODO", "path": "src", "files_only": true}`)
	if res.Output != "2 matches in 1 files\nsrc/a.go: 2\n" {
		t.Fatalf("files_only: %q", res.Output)
	}
	res = call(t, byName("glob"), env, `{"pattern": "**/*.go"}`)
	if res.Output != "src/a.go\n" {
		t.Fatalf("glob: %q", res.Output)
	}
	res = call(t, byName("list_dir"), env, `{}`)
	for _, want := range []string{".gitignore  (", "build/\n", "src/\n"} {
		if !strings.Contains(res.Output, want) {
			t.Fatalf("list_dir lacks %q: %q", want, res.Output)
		}
	}
}

func TestGrepCapSpillsToArtifact(t *testing.T) {
	env := testEnv(t)
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	testfs.Write(t, filepath.Join(env.Root.Dir(), "many.txt"), b.String())
	res := call(t, Grep{MaxMatches: 50}, env, `{"pattern": "match"}`)
	if !strings.HasPrefix(res.Output, "500 matches in 1 files\n") || res.Artifact != "a7.0" || !strings.Contains(res.Output, "read_artifact a7.0 for the rest") {
		t.Fatalf("grep cap: %q (artifact %q)", res.Output[:min(300, len(res.Output))], res.Artifact)
	}
	if strings.Count(res.Output, "many.txt:") != 50 {
		t.Fatalf("%d matches shown, want 50", strings.Count(res.Output, "many.txt:"))
	}
	page := call(t, byName("read_artifact"), env, `{"id": "a7.0", "offset": 400, "limit": 5}`)
	if !strings.Contains(page.Output, "   400\tmany.txt:400:match 399") || !strings.Contains(page.Output, "read on with offset 405") {
		t.Fatalf("artifact page: %q", page.Output)
	}
	page = call(t, byName("read_artifact"), env, `{"id": "a7.0", "pattern": "match 49[0-9]$"}`)
	if strings.Count(page.Output, "\n") != 10 {
		t.Fatalf("artifact pattern: %q", page.Output)
	}
}

func TestRemember(t *testing.T) {
	env := testEnv(t)
	res := call(t, byName("remember"), env, `{"kind": "decision", "text": " Use sqlite, not postgres. "}`)
	if res.IsError || res.Pin == nil || res.Pin.Kind != PinDecision || res.Pin.Text != "Use sqlite, not postgres." {
		t.Fatalf("remember: %+v", res)
	}
}

// TestListingCaps: list_dir and glob stop at their cap, say how many there
// are and how to see the rest, and page on from an offset.
func TestListingCaps(t *testing.T) {
	env := testEnv(t)
	for i := range 12 {
		testfs.Write(t, filepath.Join(env.Root.Dir(), "d", fmt.Sprintf("f%02d.txt", i)), "x")
	}
	tests := []struct {
		tool  Tool
		input string
		want  string
	}{
		{ListDir{MaxEntries: 5}, `{"path": "d"}`,
			"f00.txt  (1 bytes)\nf01.txt  (1 bytes)\nf02.txt  (1 bytes)\nf03.txt  (1 bytes)\nf04.txt  (1 bytes)\n[entries 1-5 of 12 shown; list on with offset 6]\n"},
		{ListDir{MaxEntries: 5}, `{"path": "d", "offset": 11}`, "f10.txt  (1 bytes)\nf11.txt  (1 bytes)\n"},
		{ListDir{MaxEntries: 5}, `{"path": "d", "offset": 13}`, "list_dir: d has 12 entries; offset 13 is past the end"},
		{Glob{MaxResults: 4}, `{"pattern": "*.txt"}`,
			"d/f00.txt\nd/f01.txt\nd/f02.txt\nd/f03.txt\n[1-4 of 12 files shown; see more with offset 5, or narrow the pattern]\n"},
		{Glob{MaxResults: 4}, `{"pattern": "d/*.txt", "offset": 9}`,
			"d/f08.txt\nd/f09.txt\nd/f10.txt\nd/f11.txt\n"},
		{Glob{MaxResults: 4}, `{"pattern": "*.md"}`, "[no files match *.md in .]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.tool.Name()+" "+tt.input, func(t *testing.T) {
			if res := call(t, tt.tool, env, tt.input); res.Output != tt.want {
				t.Fatalf("output:\n%s\nwant:\n%s", res.Output, tt.want)
			}
		})
	}
}

// read_file numbers its lines as "%6d\t" did: right-aligned in six
// columns, wider when the number needs it.
func TestAppendLineNumberIsPrintfs(t *testing.T) {
	for _, n := range []int{1, 9, 10, 99999, 100000, 999999, 1000000, 123456789} {
		if got, want := string(appendLineNumber(nil, n)), fmt.Sprintf("%6d\t", n); got != want {
			t.Errorf("line %d: %q, want %q", n, got, want)
		}
	}
}
