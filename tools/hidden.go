package tools

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// HiddenPaths returns the absolute paths that neither the file tools nor
// commands may read or write: own (bridle's own files: its settings, its
// database with its WAL, its artifacts and its cache, which can never be
// made visible), the credential stores under home, and the settings'
// hidden_paths; the settings' visible_paths take credential stores (and
// only those) off the list. "~/" (or "~\" on Windows) starts a path in
// home.
func HiddenPaths(s config.CommandSettings, home string, own []string) []string {
	abs := func(p string) string {
		if len(p) >= 2 && p[0] == '~' && os.IsPathSeparator(p[1]) && home != "" {
			p = filepath.Join(home, p[2:]) // "~/x", and "~\x" on Windows
		}
		if !filepath.IsAbs(p) {
			return ""
		}
		return filepath.Clean(p)
	}
	visible := map[string]bool{}
	for _, p := range s.VisiblePaths {
		if a := abs(p); a != "" {
			visible[a] = true
		}
	}
	var out []string
	for _, p := range own {
		if a := abs(p); a != "" {
			out = append(out, a)
		}
	}
	if home != "" {
		for _, p := range confine.CredentialStores {
			if a := filepath.Join(home, p); !visible[a] {
				out = append(out, a)
			}
		}
	}
	for _, p := range s.HiddenPaths {
		if a := abs(p); a != "" {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
