package redact

import (
	"io"
	"strings"
	"testing"
)

// Fake secrets are assembled at run time so that secret scanners do not
// flag this file.
var (
	ghToken   = "ghp_" + strings.Repeat("aB3", 12)
	awsKey    = "AKIA" + "IOSFODNN7EXAMPL1"
	slack     = "xoxb-" + "123456789012-abcdefABCDEF"
	openai    = "sk-proj-" + strings.Repeat("Zx9", 10)
	anthropic = "sk-ant-" + "api03-" + strings.Repeat("Qw8", 10)
	jwt       = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	pemKey    = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\nabcdEFGH5678\n-----END RSA " + "PRIVATE KEY-----\n"
)

func TestRedactFormats(t *testing.T) {
	r := New([]string{"MY_API_TOKEN=tok-very-secret-1234", "HOME=/root", "SHORT_KEY=abc", "PATH=/usr/bin"})
	cases := []struct {
		name, in, secret string
	}{
		{"env value", "token is tok-very-secret-1234 ok", "tok-very-secret-1234"},
		{"github", "use " + ghToken + " now", ghToken},
		{"aws", "id=" + awsKey, awsKey},
		{"slack", slack, slack},
		{"openai", "OPENAI " + openai, openai},
		{"anthropic", "x " + anthropic + " y", anthropic},
		{"jwt", "Cookie " + jwt, jwt},
		{"pem", "before\n" + pemKey + "after\n", "MIIEowIBAAKCAQEA1234"},
		{"pem tail only", "abcdEFGH5678\n-----END RSA " + "PRIVATE KEY-----\nafter", "abcdEFGH5678"},
		{"dotenv style", "DB_PASSWORD=hunter2hunter2\n", "hunter2hunter2"},
		{"aws credentials file", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", "wJalrXUtnFEMI/K7MDENG"},
		{"json", `{"auth_token": "a1b2c3d4e5f6g7"}`, "a1b2c3d4e5f6g7"},
		{"bearer", "Authorization: Bearer abcdefghijklmnop123456", "abcdefghijklmnop123456"},
		{"url password", "postgres://user:s3cretpw@db:5432/x", "s3cretpw"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := r.Redact(c.in)
			if strings.Contains(out, c.secret) {
				t.Fatalf("secret survived: %q", out)
			}
			if !strings.Contains(out, "[REDACTED:") {
				t.Fatalf("no marker in %q", out)
			}
		})
	}
}

func TestRedactLeavesCodeAlone(t *testing.T) {
	r := New(nil)
	for _, in := range []string{
		"apiKey := os.Getenv(\"API_KEY\")",
		"token = tokenize(input)",
		"password_field = \"password-input\"",
		"SHORT_KEY=abc",
		"PATH=/usr/local/bin:/usr/bin",
		"func (k *Key) String() string { return k.name }",
		"keyboard: layout",
	} {
		if out := r.Redact(in); out != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, out)
		}
	}
}

func TestDotEnv(t *testing.T) {
	r := New(nil)
	r.AddDotEnv(".env", []byte("# comment\nexport STRIPE='plainvaluewithoutdigits'\nNAME=x\nURL=\"https://example.com/hook/abc\"\n"))
	out := r.Redact("value plainvaluewithoutdigits and https://example.com/hook/abc and x")
	if strings.Contains(out, "plainvaluewithoutdigits") || strings.Contains(out, "example.com/hook") {
		t.Fatalf("dotenv value survived: %q", out)
	}
	if !strings.HasSuffix(out, "and x") {
		t.Fatalf("short value redacted: %q", out)
	}
}

func TestWriterSplitsAndBlocks(t *testing.T) {
	r := New([]string{"SECRET_VALUE=abcdefgh12345678"})
	var b strings.Builder
	w := NewWriter(r, &b)
	in := "line one abcdefgh12345678\n" + pemKey + "tail " + ghToken + "\nno newline abcdefgh12345678"
	// Feed byte by byte: secrets and the key block are split across writes.
	for i := range len(in) {
		if _, err := w.Write([]byte{in[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"abcdefgh12345678", "MIIEowIBAAKCAQEA1234", "abcdEFGH5678", ghToken} {
		if strings.Contains(out, s) {
			t.Fatalf("%q survived in %q", s, out)
		}
	}
	if !strings.Contains(out, "line one") || !strings.Contains(out, "no newline") {
		t.Fatalf("plain text lost: %q", out)
	}
}

func TestWriterLongBlock(t *testing.T) {
	r := New(nil)
	var b strings.Builder
	w := NewWriter(r, &b)
	w.Write([]byte("-----BEGIN OPENSSH " + "PRIVATE KEY-----\n"))
	body := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n", 4000)
	w.Write([]byte(body))
	w.Write([]byte("-----END OPENSSH " + "PRIVATE KEY-----\nafter\n"))
	w.Close()
	if strings.Contains(b.String(), "QUJDREVGR0") {
		t.Fatal("long key body survived")
	}
	if !strings.HasSuffix(b.String(), "after\n") {
		t.Fatalf("text after the block lost: %q", b.String()[max(0, b.Len()-100):])
	}
}

func BenchmarkRedactPlainOutput(b *testing.B) {
	r := New([]string{"A_TOKEN=abcdefgh12345678"})
	chunk := strings.Repeat("compiling module foo/bar.go: ok (12 ms)\n", 1600)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		r.Redact(chunk)
	}
}

func TestRedactKeepsLineCount(t *testing.T) {
	r := New(nil)
	for _, in := range []string{"a\n" + pemKey + "b\n", "x\nabc\n-----END RSA " + "PRIVATE KEY-----\ny\n", "a\n-----BEGIN EC " + "PRIVATE KEY-----\nabc\n"} {
		out := r.Redact(in)
		if strings.Count(out, "\n") != strings.Count(in, "\n") {
			t.Errorf("line count changed: %q -> %q", in, out)
		}
	}
}

// codeChunk is output that trips the patterns' hints (key, token, auth,
// gh, sk-) without holding a secret, as source code and logs often do.
var codeChunk = strings.Repeat("if key, ok := tokens[authHeader]; ok { return sk-limits, gh.Client(key) } // token check\n", 700)

func BenchmarkRedactCodeOutput(b *testing.B) {
	r := New([]string{"A_TOKEN=abcdefgh12345678"})
	b.SetBytes(int64(len(codeChunk)))
	for b.Loop() {
		r.Redact(codeChunk)
	}
}

// BenchmarkRedactWriter streams 1 MiB of plain and code-like output
// through a Writer in 32 KiB writes, as run_command's output arrives.
func BenchmarkRedactWriter(b *testing.B) {
	r := New([]string{"A_TOKEN=abcdefgh12345678"})
	var in []byte
	for len(in) < 1<<20 {
		in = append(in, "compiling module foo/bar.go: ok (12 ms)\n"...)
		if len(in)%7 == 0 {
			in = append(in, codeChunk[:90]...)
		}
	}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		w := NewWriter(r, io.Discard)
		for p := in; len(p) > 0; {
			n := min(len(p), 32<<10)
			w.Write(p[:n])
			p = p[n:]
		}
		w.Close()
	}
}
