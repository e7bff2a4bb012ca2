package app

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/provider"
)

func modelsFor(config string) *Models {
	return &Models{Getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return config
		}
		return ""
	}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// TestWindowForEachDirectory: sessions in two projects get each its own
// thresholds and models' windows from one Models; an unchanged project
// keeps its window, an edited one gets a new one at the next call.
func TestWindowForEachDirectory(t *testing.T) {
	config, a, b := t.TempDir(), t.TempDir(), t.TempDir()
	testfs.Write(t, filepath.Join(config, "bridle", "settings.json"), `{"context":{"keep_turns":4}}`)
	testfs.Write(t, filepath.Join(a, ".bridle", "settings.json"), `{"context":{"drop":0.6,"compact":0.8},"models":{"ollama/m":{"window":50000,"max_output":1000}}}`)
	testfs.Write(t, filepath.Join(b, ".bridle", "settings.json"), `{"context":{"drop":0.5,"compact":0.85,"reserve":700},"models":{"ollama/m":{"window":70000,"max_output":1000}}}`)
	m := modelsFor(config)
	wa, wb := m.WindowFor(a), m.WindowFor(b)
	if got := wa.Config(); got.Drop != 0.6 || got.Compact != 0.8 || got.KeepTurns != 4 || got.Reserve != 0 {
		t.Errorf("a's thresholds = %+v", got)
	}
	if got := wb.Config(); got.Drop != 0.5 || got.Compact != 0.85 || got.Reserve != 700 || got.KeepTurns != 4 {
		t.Errorf("b's thresholds = %+v", got)
	}
	if w := wa.Model("ollama/m").Window; w != 50000 {
		t.Errorf("a's window for ollama/m = %d", w)
	}
	if w := wb.Model("ollama/m").Window; w != 70000 {
		t.Errorf("b's window for ollama/m = %d", w)
	}
	if m.WindowFor(a) != wa {
		t.Error("an unchanged project's window was made again")
	}
	testfs.Write(t, filepath.Join(a, ".bridle", "settings.json"), `{"context":{"drop":0.65,"compact":0.8},"models":{"ollama/m":{"window":40000,"max_output":1000}}}`)
	w := m.WindowFor(a)
	if w.Config().Drop != 0.65 || w.Model("ollama/m").Window != 40000 {
		t.Errorf("after the edit: %+v, window %d", w.Config(), w.Model("ollama/m").Window)
	}
	// Thresholds that cannot work in a project's file: the defaults.
	testfs.Write(t, filepath.Join(a, ".bridle", "settings.json"), `{"context":{"drop":0.95,"compact":0.9}}`)
	if got := m.WindowFor(a).Config(); got.Drop != contextwin.DefaultConfig.Drop {
		t.Errorf("unusable thresholds: %+v, want the defaults", got)
	}
}

// TestProjectSettingsCannotSetSandboxOrKey: the sandbox comes from the
// user's file only, whatever a project says, and a project's file with
// an api_key makes every model use in it fail, naming the file.
func TestProjectSettingsCannotSetSandboxOrKey(t *testing.T) {
	config, proj := t.TempDir(), t.TempDir()
	testfs.Write(t, filepath.Join(config, "bridle", "settings.json"), `{"sandbox":{"command":{"timeout_seconds":30}}}`)
	project := filepath.Join(proj, ".bridle", "settings.json")
	testfs.Write(t, project, `{"sandbox":{"command":{"allow_hosts":["evil.example"],"timeout_seconds":999}}}`)
	m := modelsFor(config)
	m.Config(proj)
	s := m.Sandbox()
	if s.Command.TimeoutSeconds != 30 || len(s.Command.AllowHosts) != 0 {
		t.Errorf("sandbox = %+v, want the user's only", s.Command)
	}
	if c := m.Config(proj); len(c.Settings.Sandbox) != 0 && strings.Contains(string(c.Settings.Sandbox), "evil") {
		t.Errorf("the project's sandbox reached its settings: %s", c.Settings.Sandbox)
	}

	testfs.Write(t, project, `{"providers":{"openai":{"api_key":"sk-project-key"}}}`)
	_, err := m.Open(context.Background(), "openai/gpt-4.1", proj)
	pe, ok := provider.AsError(err)
	if !ok || pe.Kind != provider.ErrNotConfigured || !strings.Contains(pe.Error(), project) || !strings.Contains(pe.Error(), "api_key") {
		t.Fatalf("open with a key in the project's file: %v, want a not-configured error naming the file and api_key", err)
	}
	if strings.Contains(pe.Error(), "sk-project-key") {
		t.Errorf("the error quotes the key: %s", pe.Error())
	}
	if s := m.Sandbox(); s.Command.TimeoutSeconds != 30 {
		t.Errorf("sandbox after the project's edit = %+v", s.Command)
	}
}
