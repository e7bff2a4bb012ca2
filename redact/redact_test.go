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
		{"pkcs8 tail only", "QUJDREVGR0hJSktM\r\n-----END " + "PRIVATE KEY-----\r\nafter", "QUJDREVGR0hJSktM"},
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

// BenchmarkMicroRedactPlainLines redacts build-log lines in which no
// hint occurs: only the literal scan runs, never a pattern.
func BenchmarkMicroRedactPlainLines(b *testing.B) {
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

// codeChunk is one synthetic line, repeated, that trips the patterns' hints (key, token, auth,
// gh, sk-) without holding a secret, as source code and logs often do.
var codeChunk = strings.Repeat("if key, ok := tokens[authHeader]; ok { return sk-limits, gh.Client(key) } // token check\n", 700)

func BenchmarkMicroRedactHintDenseLines(b *testing.B) {
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

// TestWriterWindowBoundaries puts each kind of secret across the
// boundaries where the Writer cuts its windows (64 KiB, twice that),
// after padding with and without line breaks, written in the chunks
// run_command's output arrives in and all at once: no secret may pass,
// and the stream must come out as one Redact of the whole would.
func TestWriterWindowBoundaries(t *testing.T) {
	envValue := "envval-" + "Q7x9Lm2Pz4Hk"
	dotValue := "dotenvpw-" + "K3j8Hq1Vb6"
	// A value longer than the carry-over (a JSON key file in a variable).
	longValue := `{"type":"service_account","private_key_id":"` + strings.Repeat("k9Fz", 4000) + `"}`
	multiLine := "first-line-Wq3\nsecond-line-Zp7"
	r := New([]string{"MY_SERVICE_TOKEN=" + envValue, "GOOGLE_CREDENTIALS=" + longValue, "SIGNING_SECRET=" + multiLine})
	r.AddDotEnv(".env", []byte("DB_PASSWORD="+dotValue+"\n"))
	longJWT := "eyJ" + strings.Repeat("hbGci0iJ", 300) + ".eyJ" + strings.Repeat("zdWIi0iJ", 100) + ".dozjgNryP4J3jVmNHl0w5N"
	// A 4096-bit RSA key is about 3.2 KiB; this one is longer than the
	// carry-over.
	longKey := "-----BEGIN RSA " + "PRIVATE KEY-----\n" + strings.Repeat("MIIJKAIBAAKCAgEAq7Vb3Yc2LmZx0Tn9WfRpQs4JhDkE1uGo8aPwX5NeMvI6rCtU+\n", 200) + "-----END RSA " + "PRIVATE KEY-----"
	secrets := []struct{ name, text, secret string }{
		{"env value", envValue, envValue},
		{"long env value", longValue, longValue[40:]},
		{"multi-line env value", multiLine, multiLine},
		{".env value", "DB_PASSWORD=" + dotValue, dotValue},
		{"anthropic key", anthropic, anthropic},
		{"github token", ghToken, ghToken},
		{"assignment", "api_secret = a1b2c3d4e5f6g7h8i9", "a1b2c3d4e5f6g7h8i9"},
		{"bearer jwt", "Authorization: Bearer " + longJWT, longJWT},
		{"private key", strings.TrimSuffix(pemKey, "\n"), "MIIEowIBAAKCAQEA1234\nabcdEFGH5678"},
		{"long private key", longKey, longKey[40:200]},
	}
	for _, sec := range secrets {
		half := len(sec.text) / 2
		for _, p := range []int{1, 65530, 65535, 65536, 65537, 65536 - half, 65536 - len(sec.text) + 3, 131060, 131072 - half} {
			if p < 1 {
				continue
			}
			for _, lines := range []bool{false, true} {
				in := pad(p, lines) + sec.text + "\ntail\n"
				want := r.Redact(in)
				for _, chunk := range []int{32 << 10, 4093, len(in)} {
					var b strings.Builder
					w := NewWriter(r, &b)
					for rest := in; len(rest) > 0; {
						n := min(chunk, len(rest))
						w.Write([]byte(rest[:n]))
						rest = rest[n:]
					}
					w.Close()
					out := b.String()
					if leaked := leak(out, sec.secret); leaked != "" {
						t.Errorf("%s after %d bytes (lines %v, writes of %d): %q passed", sec.name, p, lines, chunk, leaked)
						continue
					}
					if out != want {
						t.Errorf("%s after %d bytes (lines %v, writes of %d): the stream differs from Redact of the whole", sec.name, p, lines, chunk)
					}
				}
			}
		}
	}
}

// pad returns n bytes of output, ending in a space: x's, or lines of them.
func pad(n int, lines bool) string {
	b := []byte(strings.Repeat("x", n))
	if lines {
		for i := 99; i < n; i += 100 {
			b[i] = '\n'
		}
	}
	b[n-1] = ' '
	return string(b)
}

// leak returns a 10-byte piece of secret found in out, or "".
func leak(out, secret string) string {
	seen := map[string]bool{}
	for i := 0; i+10 <= len(secret); i++ {
		if p := secret[i : i+10]; !seen[p] && strings.Contains(out, p) {
			return p
		} else {
			seen[p] = true
		}
	}
	return ""
}

func TestSecretNamePass(t *testing.T) {
	for name, want := range map[string]bool{
		"ADMIN_PASS": true, "DB_PASS": true, "PASS": true, "dbPass": true, "db-pass": true, "smtp.pass": true, "PASS_FILE": true,
		"PASSTHROUGH": false, "BYPASS": false, "COMPASS": false, "PASSENGER_COUNT": false, "SURPASS_LIMIT": false, "passive": false,
		"DB_PASSWORD": true, "HOME": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
	r := New(nil)
	for _, c := range []struct{ in, secret string }{
		{`ADMIN_PASS = "x7Kq2mP9vL4z"`, "x7Kq2mP9vL4z"},
		{"DB_PASS=hunter2hunter2\n", "hunter2hunter2"},
		{`{"smtpPass": "s3cr3tMail42"}`, "s3cr3tMail42"},
	} {
		if out := r.Redact(c.in); strings.Contains(out, c.secret) || !strings.Contains(out, "[REDACTED:assignment]") {
			t.Errorf("Redact(%q) = %q", c.in, out)
		}
	}
	for _, in := range []string{"BYPASS=abc123def456", "COMPASS_HEADING=north123abc", "PASSTHROUGH=on1234567890"} {
		if out := r.Redact(in); out != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, out)
		}
	}
}

// TestRedactPrompt: in what the user types, known values and token
// formats are redacted; what only looks secret by its context is the
// user's to write.
func TestRedactPrompt(t *testing.T) {
	r := New([]string{"ANTHROPIC_API_KEY=" + anthropic, "MY_SERVICE_TOKEN=tok-very-secret-1234"})
	r.AddDotEnv("sub/.env", []byte("DB_PASS=dotenv-value-5678\n"))
	in := "key " + anthropic + ", env tok-very-secret-1234, .env dotenv-value-5678, pasted " + ghToken + " and " + openai + "\n" + pemKey
	out, kinds := r.RedactPrompt(in)
	for _, s := range []string{anthropic, "tok-very-secret-1234", "dotenv-value-5678", ghToken, openai, "MIIEowIBAAKCAQEA1234"} {
		if strings.Contains(out, s) {
			t.Errorf("%q survived: %q", s, out)
		}
	}
	want := []string{"env:ANTHROPIC_API_KEY", "env:MY_SERVICE_TOKEN", "sub/.env:DB_PASS", "github-token", "openai-key", "private-key"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Errorf("kinds %q, want %q", kinds, want)
	}
	if strings.Count(out, "\n") != strings.Count(in, "\n") {
		t.Errorf("line count changed: %q", out)
	}
	for _, text := range []string{
		"why does DB_PASSWORD=hunter2hunter2 fail in CI?",
		"curl -H 'Authorization: Bearer abcdefghijklmnop123456' is refused",
		"connect to postgres://user:s3cretpw@db:5432/x",
		"refactor the token parser; the api_key field is optional",
		"ask for a password of at least 12 characters",
	} {
		if out, kinds := r.RedactPrompt(text); out != text || kinds != nil {
			t.Errorf("RedactPrompt(%q) = %q %q, want it unchanged", text, out, kinds)
		}
	}
}
