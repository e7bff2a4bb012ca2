package app

import (
	"os"
	"path/filepath"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/tools"
)

// HiddenPaths are what no tool may read or write and commands do not see:
// bridle's own files (OwnPaths) and the user's credential stores.
func HiddenPaths(db string, s config.Sandbox) []string {
	home, _ := os.UserHomeDir()
	return tools.HiddenPaths(s.Command, home, OwnPaths(db))
}

// OwnPaths are bridle's own settings, database, artifacts, stored images,
// checkpoints, cache and records of trust (config.PinsDir: a command
// that could write one could make a project's changed settings count as
// accepted), hidden whatever the workspace (a session at $HOME or / must not rewrite
// another session's log or widen its own box), and never made visible.
// They are made absolute: a relative --db is opened from bridle's working
// directory, and would otherwise be dropped from the list.
func OwnPaths(db string) []string {
	var own []string
	if d := CacheDir(); d != "" {
		own = append(own, d)
	}
	if p := config.UserPath(os.Getenv); p != "" {
		own = append(own, filepath.Dir(p))
	}
	if d := config.PinsDir(os.Getenv); d != "" {
		own = append(own, d)
	}
	if data := filepath.Dir(db); filepath.Base(data) == "bridle" {
		// bridle's own data directory: all of it.
		own = append(own, data)
	} else {
		// A database put somewhere else (--db, BRIDLE_DB): its files only,
		// since the directory may hold the user's work.
		own = append(own, db, db+"-wal", db+"-shm", db+"-journal",
			filepath.Join(data, "artifacts"), filepath.Join(data, "images"), filepath.Join(data, "checkpoints"))
	}
	for i, p := range own {
		if a, err := filepath.Abs(p); err == nil {
			own[i] = a
		}
	}
	return own
}

// makeOwnDirs creates bridle's own directories that may not exist yet
// (its settings, cache, artifacts and trust directories), so that the box can
// hide them: a path that does not exist cannot be covered, and a command
// with the workspace at $HOME could create ~/.config/bridle/settings.json
// and widen the next session's box.
func makeOwnDirs(db string) {
	dirs := []string{CacheDir(), filepath.Join(filepath.Dir(db), "artifacts"), config.PinsDir(os.Getenv)}
	if p := config.UserPath(os.Getenv); p != "" {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if d != "" {
			os.MkdirAll(d, 0o700)
		}
	}
}

// CacheDir is bridle's cache directory (config.CacheDir:
// $XDG_CACHE_HOME/bridle, default ~/.cache/bridle; on Windows
// %LocalAppData%\bridle\cache), or "" if there is no home to put it in.
func CacheDir() string { return config.CacheDir(os.Getenv) }

// DefaultDB is the database bridle opens when not told: $BRIDLE_DB, else
// bridle.db in config.DataDir ($XDG_DATA_HOME/bridle, default
// ~/.local/share/bridle; on Windows %LocalAppData%\bridle), else in the
// temp directory.
func DefaultDB() string {
	if p := os.Getenv("BRIDLE_DB"); p != "" {
		return p
	}
	dir := config.DataDir(os.Getenv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), ".local", "share", "bridle")
	}
	return filepath.Join(dir, "bridle.db")
}
