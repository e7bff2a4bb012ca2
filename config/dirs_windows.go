package config

import "path/filepath"

// Windows keeps a user's settings in the roaming profile (%AppData%) and
// what belongs to one machine (a database, a cache) in %LocalAppData%,
// as os.UserConfigDir and os.UserCacheDir say. The XDG variables are
// not read here.

// ConfigDir is bridle's settings directory: %AppData%\bridle; "" when
// the variable is not set.
func ConfigDir(getenv func(string) string) string { return under(getenv("AppData")) }

// DataDir is bridle's data directory (its database, artifacts, images,
// checkpoints): %LocalAppData%\bridle; "" when the variable is not set.
func DataDir(getenv func(string) string) string { return under(getenv("LocalAppData")) }

// CacheDir is bridle's cache directory: %LocalAppData%\bridle\cache; ""
// when the variable is not set.
func CacheDir(getenv func(string) string) string {
	if d := DataDir(getenv); d != "" {
		return filepath.Join(d, "cache")
	}
	return ""
}

func under(dir string) string {
	if dir == "" || !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Join(dir, "bridle")
}
