//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// TestProjectFilesAsLinks: the AGENTS.md files and the project's settings
// are read through the file tools' confinement. A link within the
// repository is followed (the session directory's own file within the
// session directory); one that leads out, or to a hidden path, is
// skipped, saying why, and its content reaches neither the instructions
// nor the settings.
func TestProjectFilesAsLinks(t *testing.T) {
	base := t.TempDir()
	home, repo := filepath.Join(base, "home"), filepath.Join(base, "repo")
	sub := filepath.Join(repo, "svc")
	testfs.WriteTree(t, home, map[string]string{
		".netrc":               "machine h password NETRC-SECRET\n",
		".config/gh/hosts.yml": "oauth_token: GH-SECRET\n",
		"creds.json":           `{"instructions":"JSON-SECRET","model":"evil/model"}`,
		"settings.json":        `{"instructions":"JSON-SECRET","model":"evil/model"}`,
	})
	testfs.WriteTree(t, repo, map[string]string{
		".git/HEAD":       "ref: refs/heads/main\n",
		"docs/rules.md":   "Top rules.\n",
		"svc/CLAUDE.md":   "Service rules.\n",
		"svc/README.md":   "readme\n",
		".ssh/id_ed25519": "HIDDEN-SECRET\n",
	})
	link := func(t *testing.T, target, name string) {
		t.Helper()
		p := filepath.Join(repo, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	hidden := func() ([]string, []string) { return []string{filepath.Join(repo, ".ssh")}, nil }

	t.Run("links within", func(t *testing.T) {
		link(t, "docs/rules.md", "AGENTS.md")
		link(t, "CLAUDE.md", "svc/AGENTS.md")
		defer os.Remove(filepath.Join(repo, "AGENTS.md"))
		defer os.Remove(filepath.Join(sub, "AGENTS.md"))
		l := loaderWith(nil)
		l.Hidden = hidden
		text, skipped := l.For(sub).Instructions()
		if !strings.Contains(text, "Top rules.") || !strings.Contains(text, "Service rules.") || len(skipped) != 0 {
			t.Fatalf("instructions %q, skipped %q", text, skipped)
		}
	})
	for _, tt := range []struct {
		name, target, link, says string
	}{
		{"parent to ~/.netrc", filepath.Join(home, ".netrc"), "AGENTS.md", "outside"},
		{"session's to gh's hosts.yml", filepath.Join(home, ".config", "gh", "hosts.yml"), "svc/AGENTS.md", "outside"},
		{"session's out of the session directory", "../docs/rules.md", "svc/AGENTS.md", "outside"},
		{"session's to /proc/self/environ", "/proc/self/environ", "svc/AGENTS.md", "outside"},
		{"parent to a hidden path inside", ".ssh/id_ed25519", "AGENTS.md", "hidden"},
		{"settings to a JSON file outside", filepath.Join(home, "creds.json"), "svc/.bridle/settings.json", "outside"},
		{"settings' directory outside", home, "svc/.bridle", "outside"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			link(t, tt.target, tt.link)
			defer os.RemoveAll(filepath.Join(sub, ".bridle"))
			defer os.Remove(filepath.Join(repo, tt.link))
			l := loaderWith(nil)
			l.Hidden = hidden
			c := l.For(sub)
			text, skipped := c.Instructions()
			for _, secret := range []string{"NETRC-SECRET", "GH-SECRET", "JSON-SECRET", "HIDDEN-SECRET", "Top rules.", "HOME="} {
				if strings.Contains(text, secret) {
					t.Errorf("the instructions hold %q:\n%s", secret, text)
				}
			}
			if c.Err != nil || c.Settings.Model != "" {
				t.Errorf("settings: err %v, model %q", c.Err, c.Settings.Model)
			}
			notes := append(skipped, c.Settings.Warnings...)
			if len(notes) != 1 || !strings.Contains(notes[0], filepath.Join(repo, strings.TrimSuffix(tt.link, "/.bridle"))) || !strings.Contains(notes[0], tt.says) {
				t.Errorf("the skipped file is not named, saying %q: %q", tt.says, notes)
			}
		})
	}
}
