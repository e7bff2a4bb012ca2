//go:build unix

package config

import "path/filepath"

// ConfigDir is bridle's settings directory: $XDG_CONFIG_HOME/bridle, else
// ~/.config/bridle; "" when neither variable is set.
func ConfigDir(getenv func(string) string) string {
	return xdgDir(getenv, "XDG_CONFIG_HOME", ".config")
}

// DataDir is bridle's data directory (its database, artifacts, images,
// checkpoints): $XDG_DATA_HOME/bridle, else ~/.local/share/bridle; ""
// when neither variable is set.
func DataDir(getenv func(string) string) string {
	return xdgDir(getenv, "XDG_DATA_HOME", filepath.Join(".local", "share"))
}

// CacheDir is bridle's cache directory: $XDG_CACHE_HOME/bridle, else
// ~/.cache/bridle; "" when neither variable is set.
func CacheDir(getenv func(string) string) string {
	return xdgDir(getenv, "XDG_CACHE_HOME", ".cache")
}

func xdgDir(getenv func(string) string, variable, underHome string) string {
	if dir := getenv(variable); dir != "" {
		return filepath.Join(dir, "bridle")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, underHome, "bridle")
	}
	return ""
}
