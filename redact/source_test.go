package redact

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sourceFiles are real source code: two large files of the Go
// distribution vendored under testdata/gosrc, and this repository's own
// Go files concatenated.
func sourceFiles(tb testing.TB) map[string]string {
	tb.Helper()
	out := map[string]string{}
	for _, name := range []string{"parser.go", "server.go"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "gosrc", name))
		if err != nil {
			tb.Fatal(err)
		}
		out[name] = string(data)
	}
	var repo strings.Builder
	err := filepath.WalkDir(filepath.Join(".."), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != filepath.Join("..") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			repo.Write(data)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	out["repo"] = repo.String()
	return out
}

// BenchmarkRedactSourceCode redacts real Go source, where the hints of
// the patterns (key, token, auth, private, pass) occur on many lines.
func BenchmarkRedactSourceCode(b *testing.B) {
	r := New([]string{"A_TOKEN=abcdefgh12345678"})
	files := sourceFiles(b)
	for _, name := range []string{"parser.go", "server.go", "repo"} {
		src := files[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				r.Redact(src)
			}
		})
	}
}
