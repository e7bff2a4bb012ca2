//go:build unix

package config

import "testing"

func TestUserSettingsPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := UserPath(env(map[string]string{"HOME": "/home/u"})); got != "/home/u/.config/bridle/settings.json" {
		t.Errorf("HOME only: %q", got)
	}
	if got := UserPath(env(map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg"})); got != "/cfg/bridle/settings.json" {
		t.Errorf("XDG_CONFIG_HOME: %q", got)
	}
	if got := UserPath(env(nil)); got != "" {
		t.Errorf("no home: %q", got)
	}
}

func TestDirs(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	home := env(map[string]string{"HOME": "/home/u", "AppData": `C:\x`})
	xdg := env(map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "/d", "XDG_CACHE_HOME": "/c"})
	for _, tt := range []struct{ got, want string }{
		{DataDir(home), "/home/u/.local/share/bridle"},
		{CacheDir(home), "/home/u/.cache/bridle"},
		{ConfigDir(home), "/home/u/.config/bridle"},
		{DataDir(xdg), "/d/bridle"},
		{CacheDir(xdg), "/c/bridle"},
		{DataDir(env(nil)), ""},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
