package redact

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedactLeavesRealCodeAlone redacts real source code holding no
// secret: the vendored Go files and this repository's own non-test Go
// files (its tests hold fake secrets on purpose). Redacting code keeps
// the model from reading and editing it.
func TestRedactLeavesRealCodeAlone(t *testing.T) {
	r := New(nil)
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if strings.Contains(path, "testdata") && !strings.Contains(path, "gosrc") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		in := string(data)
		if out, kinds := r.RedactKinds(in); out != in {
			t.Errorf("%s: redacted %v:\n%s", path, kinds, firstChange(in, out))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// firstChange returns the first line where in and out differ.
func firstChange(in, out string) string {
	a, b := strings.Split(in, "\n"), strings.Split(out, "\n")
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + "\n-> " + b[i]
		}
	}
	return ""
}

// TestRedactLeavesIdentifiersAlone holds assignments whose names contain a
// secret word inside another word, with values that look like literals,
// and code that names a key block's end marker inside a line.
func TestRedactLeavesIdentifiersAlone(t *testing.T) {
	r := New(nil)
	for _, in := range []string{
		`tokenizer := "wordpiece2024uncased"`,
		`Tokenizer: cl100k_base`,
		`KEYBOARD_LAYOUT=us104international`,
		`KEYWORD_LIMIT = "max2048keywords"`,
		`keywords: [x1y2z3w4v5]`,
		`author: "jdoe2024example"`,
		`AUTHOR_EMAIL=jdoe2024@example.org`,
		`passthrough = "mode2passthrough"`,
		`keyboardShortcut := "ctrl+shift+k1"`,
		"x509 := parse(b)\nif strings.HasPrefix(line, \"-----END\") && strings.Contains(line, \"PRIVATE KEY-----\") {\n",
	} {
		if out := r.Redact(in); out != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, out)
		}
	}
}

// TestSecretNameWords holds the names that stay secret under the word
// rule: the word ends the name, is followed by a non-letter or by a new
// camel-case word, or is plural.
func TestSecretNameWords(t *testing.T) {
	for name, want := range map[string]bool{
		"APIKEY": true, "api_key": true, "apiKeyID": true, "privateKeyBytes": true, "GITHUB_TOKENS": true,
		"Authorization": true, "AUTH_HEADER": true, "db_passwords": true, "SECRET2": true, "credentials": true,
		"sessionid": true, "JSESSIONID": true, "PHPSESSID": true, "sessionId": true,
		"KEYBOARD": false, "KEYWORD": false, "Tokenizer": false, "author": false, "keywords": false, "TOKENIZER": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}
