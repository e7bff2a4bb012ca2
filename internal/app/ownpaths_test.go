package app

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/bridle-dev/bridle/config"
)

// TestOwnPaths checks that bridle's own files are on the hidden list as
// absolute paths: a relative --db would otherwise be dropped from it, and
// the file tools would let the model read the database.
func TestOwnPaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	own := OwnPaths("work.db")
	for _, want := range []string{
		filepath.Join(dir, "work.db"), filepath.Join(dir, "work.db-wal"), filepath.Join(dir, "artifacts"),
		filepath.Join(home, ".config", "bridle"), filepath.Join(home, ".cache", "bridle"),
		// The records of trust, wherever the database is.
		filepath.Join(home, ".local", "share", "bridle", "trust"),
	} {
		if !slices.Contains(own, want) {
			t.Errorf("OwnPaths lacks %s: %v", want, own)
		}
	}
	hidden := HiddenPaths("work.db", config.Sandbox{})
	for _, p := range own {
		if !filepath.IsAbs(p) || !slices.Contains(hidden, p) {
			t.Errorf("%s is not on the hidden list %v", p, hidden)
		}
	}
	if !slices.Contains(hidden, filepath.Join(home, ".ssh")) {
		t.Errorf("hidden list lacks ~/.ssh: %v", hidden)
	}
	// bridle's own data directory is hidden whole.
	data := filepath.Join(home, ".local", "share", "bridle")
	if own := OwnPaths(filepath.Join(data, "bridle.db")); !slices.Contains(own, data) {
		t.Errorf("OwnPaths lacks the data directory %s: %v", data, own)
	}
}
