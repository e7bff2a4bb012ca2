package redact

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// laravelEnv is the .env a Laravel project starts with: ordinary values
// (a driver, a host, a URL, a user name) beside one secret, APP_KEY.
var laravelEnv = "APP_NAME=Laravel\nAPP_ENV=local\nAPP_KEY=base64:" + "q8Vz3Lk2Xw9Rt4Mn7Bp1Hs6Jd0Fg5Ye2Ua8Ci3Oe=" + "\nAPP_DEBUG=true\n" +
	"APP_URL=http://localhost:8080\n\nDB_CONNECTION=pgsql\nDB_HOST=127.0.0.1\nDB_PORT=5432\nDB_DATABASE=laravel\n" +
	"DB_USERNAME=postgres\nDB_PASSWORD=secret\n\nSESSION_DRIVER=database\nSESSION_LIFETIME=120\nCACHE_STORE=database\n" +
	"MAIL_MAILER=smtp\nMAIL_HOST=mailpit\nMAIL_PORT=1025\nMAIL_FROM_ADDRESS=\"hello@example.com\"\n"

// TestOrdinaryValuesOnlyAsWritten: the values of a repository's .env
// that are words, hosts, URLs or numbers are redacted where they appear
// as written, and nowhere else: not in another case (PostgreSQL,
// LOCALHOST), reversed, or cut in pieces (localhost:8080 of
// http://localhost:8080). A value that looks random, a secret, is still
// found in every form.
func TestOrdinaryValuesOnlyAsWritten(t *testing.T) {
	r := New(nil)
	r.AddDotEnv(".env", []byte(laravelEnv))
	key := "base64:" + "q8Vz3Lk2Xw9Rt4Mn7Bp1Hs6Jd0Fg5Ye2Ua8Ci3Oe="
	kept := []string{
		"The app uses PostgreSQL on localhost:8080.",
		"Run the Database\\Seeders\\DatabaseSeeder class.",
		"curl -s LOCALHOST:8080/health",
		"psql -h db.local -U POSTGRES laravel",
		"sergtsop is a user name reversed, 0808:tsohlacol//:ptth a URL reversed",
		"listen on http://localhost:8081 and https://localhost:8080",
		"write to HELLO@EXAMPLE.COM",
	}
	for _, in := range kept {
		if out := r.Redact(in); out != in {
			t.Errorf("Redact(%q) = %q: an ordinary value's other form was taken for a secret", in, out)
		}
		if out := chatWords(r, in); out != in {
			t.Errorf("streamed, %q came out as %q", in, out)
		}
	}
	redacted := []struct{ name, in, gone string }{
		{"an ordinary value as written", "open http://localhost:8080 now", "http://localhost:8080"},
		{"a user name as written", "psql -U postgres", "postgres"},
		{"the key as written", "APP_KEY is " + key, key[7:]},
		{"the key in upper case", "echo " + strings.ToUpper(key), strings.ToUpper(key[7:])},
		{"the key reversed", "rev: " + reverse(key), reverse(key[7:])},
		{"the key's first half", "key: " + key[:len(key)/2+2] + " (cut)", key[:len(key)/2+2]},
		{"the key's second half", "rest:\n" + key[len(key)/2-2:] + "\n", key[len(key)/2-2:]},
		{"the key in hex", "xxd: " + hex.EncodeToString([]byte(key)), hex.EncodeToString([]byte(key))},
		{"the key in base64", "b64: " + base64.StdEncoding.EncodeToString([]byte(key)), base64.StdEncoding.EncodeToString([]byte(key))[4:40]},
	}
	for _, c := range redacted {
		out := r.Redact(c.in)
		if strings.Contains(strings.ToLower(out), strings.ToLower(c.gone)) || !strings.Contains(out, "[REDACTED:.env:") {
			t.Errorf("%s: Redact(%q) = %q", c.name, c.in, out)
		}
	}
}

// TestRandomLooking: what looks like a secret, and what does not.
func TestRandomLooking(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"hunter2hunter2", true},
		{"q8Vz3Lk2Xw9Rt4Mn7Bp1", true},
		{"550e8400-e29b-41d4-a716-446655440000", true},
		{"sk_live_4eC39HqLyjWDarjtT1zdp7dc", true},
		{"dotenvwin-Hx7Pq2Zr9Lk4Vm", true},
		{"http://localhost:8080", false},
		{"postgres", false},
		{"database", false},
		{"127.0.0.1", false},
		{"utf8mb4_unicode_ci", false},
		{"us-east-1", false},
		{"tok-very-secret-1234", false},
		{"correct horse battery 42", false},
		{"PostgreSQL", false},
	} {
		if got := randomLooking(c.v); got != c.want {
			t.Errorf("randomLooking(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}
