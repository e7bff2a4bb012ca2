package redact

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
)

func TestLoadDotEnvTree(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	deep := strings.Repeat("d/", dotEnvDepth+1) // a .env one level too deep
	testfs.WriteTree(t, ws, map[string]string{
		".env":                    "TOP=top-value-1234\n",
		"sub/.env":                "DB_PASS=sub-value-5678\n",
		"services/api/.env.local": "API_TOKEN=api-value-9012\n",
		"d/d/.env":                "NEAR=near-value-3456\n",
		deep + ".env":             "FAR=far-value-7890\n",
		"node_modules/pkg/.env":   "NM=nodemod-value-1111\n",
		".git/.env":               "G=gitdir-value-2222\n",
		".gitignore":              "build/\n.env\n",
		"build/.env":              "B=ignored-dir-value-3333\n",
		"sub/.env.example":        "EX=example-value-4444\n",
		"services/.gitignore":     "cache\n",
		"services/cache/.env":     "C=nested-ignore-value-5555\n",
		"big/.env":                "BIG=" + strings.Repeat("b", dotEnvMax) + "\n",
	})
	testfs.WriteTree(t, outside, map[string]string{"linked/.env": "L=outside-dir-value-6666\n", "secret.txt": "S=outside-file-value-7777\n"})
	if err := os.Symlink(filepath.Join(outside, "linked"), filepath.Join(ws, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "sub", ".env.local")); err != nil {
		t.Fatal(err)
	}
	r := New(nil)
	files, complete := r.LoadDotEnvTree(ws)
	if complete {
		t.Error("the walk says it was complete, but a .env was deeper than its bound")
	}
	if want := []string{".env", "d/d/.env", "services/api/.env.local", "sub/.env"}; !slices.Equal(files, want) {
		t.Errorf("files read %q, want %q", files, want)
	}
	for _, v := range []string{"top-value-1234", "sub-value-5678", "api-value-9012", "near-value-3456"} {
		if out := r.Redact("x " + v + " y"); strings.Contains(out, v) {
			t.Errorf("%s not redacted: %q", v, out)
		}
	}
	if out := r.Redact("sub-value-5678"); out != "[REDACTED:sub/.env:DB_PASS]" {
		t.Errorf("marker %q does not name the file", out)
	}
	for _, v := range []string{"far-value-7890", "nodemod-value-1111", "gitdir-value-2222", "ignored-dir-value-3333", "example-value-4444",
		"nested-ignore-value-5555", "outside-dir-value-6666", "outside-file-value-7777"} {
		if out := r.Redact(v); out != v {
			t.Errorf("%s was read: %q", v, out)
		}
	}
	if _, complete := New(nil).LoadDotEnvTree(filepath.Join(ws, "services")); !complete {
		t.Error("a small tree was not walked whole")
	}
}

func TestLoadDotEnvTreeBounds(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := range dotEnvFiles + 5 {
		files[filepath.Join("pkg"+strings.Repeat("x", i%7), string(rune('a'+i%26))+string(rune('a'+i/26)), ".env")] = "K=value-number-12345\n"
	}
	testfs.WriteTree(t, ws, files)
	got, complete := New(nil).LoadDotEnvTree(ws)
	if complete || len(got) != dotEnvFiles {
		t.Errorf("read %d files (complete %v), want the first %d and incomplete", len(got), complete, dotEnvFiles)
	}
}
