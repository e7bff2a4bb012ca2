package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/testfs"
)

// TestDoctorListsLanguageServers: `bridle doctor` says of each language's
// server whether it is found (and where), missing from PATH, turned off,
// or refused because the project's settings named a command the user
// did not trust.
func TestDoctorListsLanguageServers(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"gopls", "my-zls"} {
		testfs.Write(t, filepath.Join(bin, name), "#!/bin/sh\nexit 0\n")
		os.Chmod(filepath.Join(bin, name), 0o755)
	}
	project := acptest.Workspace(t, map[string]string{
		".bridle/settings.json": `{"lsp":{"servers":{"rust":{"command":"/tmp/evil-analyzer"},"python":{"enabled":false}}}}`,
	})
	cfg, _ := userSettings(t, `{"lsp":{"servers":{"zig":{"command":"my-zls","files":["*.zig"]}}}}`)
	cmd := exec.Command(acptest.Binary(t), "doctor", "--json")
	cmd.Dir = project
	cmd.Env = append(os.Environ(), cfg, "PATH="+bin+":/usr/bin:/bin")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bridle doctor --json: %v\n%s", err, out)
	}
	var r struct {
		Servers []struct {
			Language, State, Path, Detail string
		} `json:"language_servers"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("bridle doctor --json printed %s: %v", out, err)
	}
	got := map[string]string{}
	for _, s := range r.Servers {
		got[s.Language] = s.State + " " + s.Path + s.Detail
	}
	want := map[string][]string{
		"go":         {"found " + filepath.Join(bin, "gopls")},
		"zig":        {"found " + filepath.Join(bin, "my-zls")},
		"typescript": {"missing", "typescript-language-server not found on PATH", "install:"},
		"python":     {"off", "turned off by lsp.servers.python.enabled"},
		"rust":       {"refused", "lsp.servers.rust.command", filepath.Join(project, ".bridle", "settings.json"), "trusted_projects"},
	}
	for lang, says := range want {
		for _, s := range says {
			if !strings.Contains(got[lang], s) {
				t.Errorf("%s: doctor says %q, want it to say %q", lang, got[lang], s)
			}
		}
	}

	// The terminal's report says the same, apart from the box's layers.
	cmd = exec.Command(acptest.Binary(t), "doctor")
	cmd.Dir = project
	cmd.Env = append(os.Environ(), cfg, "PATH="+bin+":/usr/bin:/bin")
	text, err := cmd.Output()
	if err != nil {
		t.Fatalf("bridle doctor: %v\n%s", err, text)
	}
	for _, s := range []string{"Language servers for this directory", "found    go           " + filepath.Join(bin, "gopls"), "refused  rust"} {
		if !strings.Contains(string(text), s) {
			t.Errorf("bridle doctor does not say %q:\n%s", s, text)
		}
	}
}
