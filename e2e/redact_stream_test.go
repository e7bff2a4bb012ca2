package e2e

import (
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// pieces cuts s into pieces of n bytes, as a model's answer streams.
func pieces(s string, n int) []string {
	var out []string
	for s != "" {
		k := min(n, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// streamAnswer has a model stream answer in the given pieces to a fresh
// session in ws and waits for the turn's end: the harness gives up (and
// the test fails) if it does not come. It returns what the editor was
// shown, joined, the answer the log holds, and what a new bridle shows
// of it on session/load (redacted again, as a replay is).
func streamAnswer(t *testing.T, ws string, parts []string) (shown, logged, replayed string) {
	t.Helper()
	srv := providertest.NewServer(t, providertest.Reply{Body: anthropicText(parts)})
	env := isolated(t, "ANTHROPIC_API_KEY=e2e-redact-key-0000", "ANTHROPIC_BASE_URL="+srv.URL)
	a := acptest.Start(t, acptest.Options{Model: "anthropic/claude-sonnet-4-5", Env: env})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "answer"); stop != "end_turn" {
		t.Fatalf("stopReason = %q; stderr:\n%s", stop, a.Stderr())
	}
	shown = answerText(a.Updates(sid))
	answers := eventsOf(acptest.Log(t, a.DB, sid), "assistant_message")
	if len(answers) != 1 {
		t.Fatalf("the log holds %d answers, want 1", len(answers))
	}
	logged, _ = answers[0]["text"].(string)
	a.Kill()
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: "anthropic/claude-sonnet-4-5", Env: env})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	return shown, logged, answerText(b.Updates(sid))
}

// answerText joins the answer's chunks among updates.
func answerText(updates []acptest.Update) string {
	var b strings.Builder
	for _, u := range updates {
		if u.Kind == "agent_message_chunk" {
			b.WriteString(u.Text)
		}
	}
	return b.String()
}

// sameShown checks that the log and a replay show what the editor was
// shown live, and that it is want.
func sameShown(t *testing.T, shown, logged, replayed, want string) {
	t.Helper()
	for _, c := range []struct{ name, got string }{{"the editor was shown", shown}, {"the log holds", logged}, {"session/load shows", replayed}} {
		if c.got == want {
			continue
		}
		i := 0
		for i < min(len(c.got), len(want)) && c.got[i] == want[i] {
			i++
		}
		t.Errorf("%s %d bytes, want %d; they differ at byte %d: %.100q, want %.100q", c.name, len(c.got), len(want), i, c.got[i:], want[i:])
	}
}

// TestStreamedAttackEndsPromptlyThroughTheBinary: an answer a repository
// can make a model write to stall the redaction of what it streams —
// 8,000 "%" (each may begin an escape), a GitHub token's prefix followed
// by 192 KB of token characters (a match held without bound), and
// "key=$1" 16,000 times (an assignment's hint over and over) — streams
// through, and the turn ends: before, the first took minutes, the second
// tens of seconds, the third 44 s to redact once recorded. The editor
// is shown the token's marker, never its characters, and what it was
// shown is what the log holds.
func TestStreamedAttackEndsPromptlyThroughTheBinary(t *testing.T) {
	body := strings.Repeat("a1B2", 48_000)
	answer := strings.Repeat("%", 8000) + " then ghp_" + body + " and " + strings.Repeat("key=$1", 16_000) + " Done."
	shown, logged, replayed := streamAnswer(t, acptest.Workspace(t, nil), pieces(answer, 64))
	want := strings.Repeat("%", 8000) + " then [REDACTED:github-token]" + body[255:] + " and " + strings.Repeat("key=$1", 16_000) + " Done."
	sameShown(t, shown, logged, replayed, want)
}

// TestStreamedSecretAfterLongTextThroughTheBinary: what a Chat shows of
// an answer is what Redact makes of it whole, however far into the
// answer, so a replay shows what the editor was shown live. A secret a
// model writes in pieces after more than 8 KB of answer (a token, a
// .env file's value) is never shown; and a run of text longer than 8 KB
// with an escape at its end is not taken for a token where 8 KB before
// the escape happens to fall (before, Redact decoded a run that started
// there and saw a token's start, while the chat, which keeps 1 KiB of
// context, did not: the replay showed a marker the editor had not).
func TestStreamedSecretAfterLongTextThroughTheBinary(t *testing.T) {
	value := "dotenvlong-" + "Qm4Zr8Xk2Wv6Tn"
	token := "ghp_" + "Lx3Rv8Kq2Zw7Ym4Tn9Bd6Hs1Fc5Jp0Ga4Ue"
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 200) // 9 KB
	run := strings.Repeat("aghp_"+strings.Repeat("b", 36), 300) + strings.Repeat("c", 34) + "%41"
	answer := prose + "The token is " + token + ", the value " + value + ".\n" + run + " then " + token + " and " + value + " end."
	// Pieces that cut both secrets, and the text before them, everywhere.
	var parts []string
	for i, s := 0, answer; s != ""; i++ {
		n := min(len(s), 1+(i*7)%23)
		if i%40 == 0 {
			n = min(len(s), 4000)
		}
		parts = append(parts, s[:n])
		s = s[n:]
	}
	ws := acptest.Workspace(t, map[string]string{".env": "K=" + value + "\n"})
	shown, logged, replayed := streamAnswer(t, ws, parts)
	want := prose + "The token is [REDACTED:github-token], the value [REDACTED:.env:K].\n" + run + " then [REDACTED:github-token] and [REDACTED:.env:K] end."
	sameShown(t, shown, logged, replayed, want)
	for _, secret := range []string{token[:12], token[len(token)-12:], value[:10], value[len(value)-10:]} {
		if strings.Contains(shown, secret) {
			t.Errorf("the editor was shown %q of a secret", secret)
		}
	}
}

// TestStreamedOrdinaryDotEnvValuesThroughTheBinary: with a Laravel
// project's .env in the workspace, an answer that names PostgreSQL and
// localhost:8080 is shown as written (DB_USERNAME=postgres and
// APP_URL=http://localhost:8080 are no secrets to find in other cases
// or in pieces), while the random APP_KEY is redacted in upper case too.
func TestStreamedOrdinaryDotEnvValuesThroughTheBinary(t *testing.T) {
	key := "base64:" + "q8Vz3Lk2Xw9Rt4Mn7Bp1Hs6Jd0Fg5Ye2Ua8Ci3Oe="
	env := "APP_NAME=Laravel\nAPP_KEY=" + key + "\nAPP_URL=http://localhost:8080\nDB_CONNECTION=pgsql\n" +
		"DB_HOST=127.0.0.1\nDB_USERNAME=postgres\nSESSION_DRIVER=database\n"
	ws := acptest.Workspace(t, map[string]string{".env": env})
	answer := "The app talks to PostgreSQL and serves LOCALHOST:8080 (localhost:8080). Its key, upper-cased: " + strings.ToUpper(key) + "\n"
	shown, logged, replayed := streamAnswer(t, ws, pieces(answer, 5))
	want := "The app talks to PostgreSQL and serves LOCALHOST:8080 (localhost:8080). Its key, upper-cased: [REDACTED:.env:APP_KEY]\n"
	sameShown(t, shown, logged, replayed, want)
}
