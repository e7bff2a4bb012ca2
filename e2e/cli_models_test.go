package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// cliSettings is userSettings' environment, with no provider of the
// machine running the tests.
func cliSettings(t *testing.T, settings string) []string {
	t.Helper()
	env, _ := userSettings(t, settings)
	return append(noProviders(), env)
}

// firstWindow is the window the session's first request was budgeted for.
func firstWindow(t *testing.T, db, sid string) float64 {
	t.Helper()
	out, err := acptest.Run(t, "log", "--context", "--json", "--db", db, sid)
	if err != nil {
		t.Fatalf("bridle log --context: %v\n%s", err, out)
	}
	var row map[string]any
	line, _, _ := strings.Cut(out, "\n")
	if err := json.Unmarshal([]byte(line), &row); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return row["window"].(float64)
}

// TestCLIModels: OLLAMA_HOST overrides a settings base_url, as
// docs/configuration.md says the environment does; a custom provider's
// "gpt-5" is not taken for OpenAI's (400k window) by its name, and a model
// the catalogue does not know is said on stderr with the window it gets;
// a provider without api_key_env sends no key.
func TestCLIModels(t *testing.T) {
	text := recorded(t, "openai/text.sse")
	dir := acptest.Workspace(t, nil)

	t.Run("OLLAMA_HOST over settings", func(t *testing.T) {
		srv := providertest.NewServer(t, providertest.Reply{Body: text})
		env := append(cliSettings(t, `{"providers":{"ollama":{"base_url":"http://127.0.0.1:9/v1"}}}`), "OLLAMA_HOST="+strings.TrimPrefix(srv.URL, "http://"))
		out, errs, code := runHeadless(t, env, "", "run", "--db", filepath.Join(t.TempDir(), "b.db"), "--model", "ollama/qwen3-coder", "--cwd", dir, "hi")
		if code != 0 || len(srv.Requests()) != 1 {
			t.Errorf("exit %d, %d requests to OLLAMA_HOST; want 0 and 1\n%s\n%s", code, len(srv.Requests()), out, errs)
		}
	})

	t.Run("custom provider gpt-5", func(t *testing.T) {
		srv := providertest.NewServer(t, providertest.Reply{Body: text})
		env := cliSettings(t, `{"providers":{"local":{"api":"openai","base_url":"`+srv.URL+`/v1"}}}`)
		db := filepath.Join(t.TempDir(), "b.db")
		out, errs, code := runHeadless(t, env, "", "run", "--db", db, "--model", "local/gpt-5", "--cwd", dir, "hi")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		sid := sessionsOf(t, db)[0].SessionID
		if w := firstWindow(t, db, sid); w != 32768 {
			t.Errorf("local/gpt-5 was budgeted a %v-token window, want the conservative 32768", w)
		}
		if n := strings.Count(errs, "model local/gpt-5 is not in bridle's catalogue: its context window is taken as 32768 tokens"); n != 1 {
			t.Errorf("the unknown model's window is said %d times on stderr, want once:\n%s", n, errs)
		}
		if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
			t.Errorf("a provider without api_key_env sent Authorization %q", h)
		}
	})

	t.Run("known model is not warned about", func(t *testing.T) {
		srv := providertest.NewServer(t, providertest.Reply{Body: text})
		env := append(cliSettings(t, `{}`), "OLLAMA_HOST="+strings.TrimPrefix(srv.URL, "http://"))
		_, errs, code := runHeadless(t, env, "", "run", "--db", filepath.Join(t.TempDir(), "b.db"), "--model", "ollama/qwen3-coder:30b", "--cwd", dir, "hi")
		if code != 0 || strings.Contains(errs, "catalogue") {
			t.Errorf("exit %d, stderr:\n%s", code, errs)
		}
	})
}
