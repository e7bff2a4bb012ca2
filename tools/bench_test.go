package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// bigTree builds a tree of 100,000 small source files in 1,000
// directories; one file in every 1,000 has a line matching the pattern.
// It is removed when the benchmark ends.
func bigTree(b *testing.B) string {
	dir := b.TempDir()
	body := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { return }\n", 16)
	for d := range 1000 {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			text := body
			if f == 0 && d%10 == 0 {
				text += "// needle: the rare line\n"
			}
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.go", f)), []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}

// BenchmarkGrep100k searches 100,000 files for a rare literal. Compare
// with the Rg and GrepR sub-benchmarks (external tools on the same tree).
func BenchmarkGrep100k(b *testing.B) {
	dir := bigTree(b)
	root, err := confine.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	env := &Env{Root: root}
	b.Run("bridle", func(b *testing.B) {
		for b.Loop() {
			res := Grep{}.Run(context.Background(), env, json.RawMessage(`{"pattern": "needle: the"}`))
			if !strings.HasPrefix(res.Output, "100 matches in 100 files") {
				b.Fatalf("unexpected result: %.200s", res.Output)
			}
		}
	})
	// As in a session: bridle's own files and the credential stores are
	// hidden, one of them inside the tree.
	hiding, err := confine.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer hiding.Close()
	home, _ := os.UserHomeDir()
	hiding.Hide(HiddenPaths(config.CommandSettings{}, home, []string{filepath.Join(dir, "pkg500"), filepath.Join(home, ".config", "bridle")})...)
	hidingEnv := &Env{Root: hiding}
	b.Run("bridle-hiding", func(b *testing.B) {
		for b.Loop() {
			res := Grep{}.Run(context.Background(), hidingEnv, json.RawMessage(`{"pattern": "needle: the"}`))
			if !strings.HasPrefix(res.Output, "99 matches in 99 files") {
				b.Fatalf("unexpected result: %.200s", res.Output)
			}
		}
	})
	for _, tool := range []struct {
		name, bin string
		args      []string
	}{
		{"rg", "rg", []string{"-n", "needle: the", dir}},
		{"grep-r", "grep", []string{"-rn", "needle: the", dir}},
	} {
		if _, err := exec.LookPath(tool.bin); err != nil {
			continue
		}
		b.Run(tool.name, func(b *testing.B) {
			for b.Loop() {
				out, err := exec.Command(tool.bin, tool.args...).Output()
				if err != nil || strings.Count(string(out), "\n") != 100 {
					b.Fatalf("%s: %v (%d lines)", tool.bin, err, strings.Count(string(out), "\n"))
				}
			}
		})
	}
}

// BenchmarkMicroReadFile (micro: the tool alone, no session) reads the
// first 2,000 lines of go/parser's parser.go with read_file: open, read,
// redact, number the lines.
func BenchmarkMicroReadFile(b *testing.B) {
	dir := b.TempDir()
	testfs.Write(b, filepath.Join(dir, "parser.go"), testfs.GoSource(b, 2000))
	root, err := confine.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	env := &Env{Root: root, Key: "sess/7/0", Redactor: redact.New(nil)}
	input := json.RawMessage(`{"path":"parser.go"}`)
	for b.Loop() {
		if res := (ReadFile{}).Run(context.Background(), env, input); res.IsError {
			b.Fatal(res.Output)
		}
	}
}
