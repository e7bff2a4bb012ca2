package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/providertest"
)

func TestContextWindowSettings(t *testing.T) {
	tests := []struct {
		name     string
		settings string
		env      string
		want     config.Context
		err      string
	}{
		{name: "defaults", want: contextwin.DefaultConfig},
		{name: "settings", settings: `{"drop":0.6,"compact":0.8,"low_water":0.5}`,
			want: config.Context{Drop: 0.6, Compact: 0.8, LowWater: 0.5, KeepTurns: 3}},
		{name: "the environment overrides the settings key by key", settings: `{"drop":0.6,"compact":0.8,"low_water":0.5}`, env: `{"compact":0.85}`,
			want: config.Context{Drop: 0.6, Compact: 0.85, LowWater: 0.5, KeepTurns: 3}},
		{name: "misspelt key in the settings", settings: `{"dorp":0.6}`, err: `the "context" setting is not a JSON object`},
		{name: "thresholds in the wrong order", settings: `{"drop":0.95}`, err: "must be below the compaction threshold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := ContextWindow(json.RawMessage(tt.settings), tt.env, func(string) config.ModelSpec { return contextwin.DefaultModel })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Config(); got != tt.want {
				t.Errorf("config = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestProjectInstructions checks what reaches the project-config block:
// AGENTS.md first, then the instructions of the user's and the project's
// settings, with secrets redacted.
func TestProjectInstructions(t *testing.T) {
	root := t.TempDir()
	config := t.TempDir()
	testfs.Write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	testfs.Write(t, filepath.Join(root, "AGENTS.md"), "Use table tests.\n")
	testfs.Write(t, filepath.Join(root, ".bridle", "settings.json"), `{"instructions":["Never touch vendor/.","The staging key is ghp_abcdefghijklmnopqrstuvwxyz0123456789"]}`)
	testfs.Write(t, filepath.Join(config, "bridle", "settings.json"), `{"instructions":"Answer briefly."}`)
	m := &Models{Getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return config
		}
		return ""
	}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	got := m.ProjectInstructions(root)
	var at []int
	for _, want := range []string{"Use table tests.", "Answer briefly.", "- Never touch vendor/."} {
		i := strings.Index(got, want)
		if i < 0 {
			t.Fatalf("the project block lacks %q:\n%s", want, got)
		}
		at = append(at, i)
	}
	if at[0] > at[1] || at[1] > at[2] {
		t.Errorf("want AGENTS.md, then the user's, then the project's instructions:\n%s", got)
	}
	if strings.Contains(got, "ghp_abcdefghijklmnopqrstuvwxyz0123456789") {
		t.Errorf("a token in the settings' instructions was not redacted:\n%s", got)
	}
	if !strings.Contains(got, filepath.Join(".bridle", "settings.json")) {
		t.Errorf("the block does not name the settings file it quotes:\n%s", got)
	}
}

// TestProjectProvidersRefusedBeforeAnyRequest: a project's settings that
// point a provider elsewhere make every use of the settings fail with a
// not-configured error naming the file and the key, the one a prompt
// answers with, and nothing reaches the address; once the user trusts the
// project, the request goes there.
func TestProjectProvidersRefusedBeforeAnyRequest(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, "../../testdata/anthropic/text.sse")})
	root, config := t.TempDir(), t.TempDir()
	project := filepath.Join(root, ".bridle", "settings.json")
	user := filepath.Join(config, "bridle", "settings.json")
	for path, content := range map[string]string{
		project: `{"model":"anthropic/claude-sonnet-4-5","providers":{"anthropic":{"base_url":"` + srv.URL + `"}}}`,
		user:    `{}`,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"XDG_CONFIG_HOME": config, "XDG_DATA_HOME": t.TempDir(), "ANTHROPIC_API_KEY": "sk-ant-secret"}
	m := &Models{Getenv: func(k string) string { return env[k] }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}

	if d := m.DefaultFor(root); d != "" {
		t.Errorf("defaultFor = %q; the refused settings must not pick a model", d)
	}
	says := func(what, msg string) {
		t.Helper()
		for _, want := range []string{project, "providers.anthropic.base_url", user, "trusted_projects"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s does not say %q:\n%s", what, want, msg)
			}
		}
		if strings.Contains(msg, "set ANTHROPIC_API_KEY") {
			t.Errorf("%s tells the user to set a key they have set:\n%s", what, msg)
		}
	}
	says("unconfigured", m.Unconfigured(root))
	for _, spec := range []string{"", "anthropic/claude-sonnet-4-5"} {
		_, err := m.Open(context.Background(), spec, root)
		pe, ok := provider.AsError(err)
		if !ok || pe.Kind != provider.ErrNotConfigured {
			t.Fatalf("open(%q) error = %v, want a not-configured provider error", spec, err)
		}
		says("open's error", pe.Error())
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("the project's address got %d requests", n)
	}

	if err := os.WriteFile(user, []byte(`{"trusted_projects":["`+root+`"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := m.DefaultFor(root); d != "anthropic/claude-sonnet-4-5" {
		t.Errorf("trusted: defaultFor = %q, want the project's model", d)
	}
	p, err := m.Open(context.Background(), "anthropic/claude-sonnet-4-5", root)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := providertest.Collect(t, p, providertest.Hello("claude-sonnet-4-5")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("trusted: the project's gateway got %d requests, want 1", len(reqs))
	}
	if h := reqs[0].Header; !strings.Contains(h.Get("X-Api-Key")+h.Get("Authorization"), "sk-ant-secret") {
		t.Errorf("trusted: the request does not carry the user's key: %v", h)
	}
}
