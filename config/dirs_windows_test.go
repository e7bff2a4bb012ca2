package config

import "testing"

// On Windows the settings roam with the profile (%AppData%); the
// database, artifacts and cache stay on the machine (%LocalAppData%).
// The XDG variables are not read.
func TestDirs(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	win := env(map[string]string{"AppData": `C:\Users\u\AppData\Roaming`, "LocalAppData": `C:\Users\u\AppData\Local`,
		"XDG_CONFIG_HOME": `C:\xdg`, "HOME": `C:\home`})
	for _, tt := range []struct{ got, want string }{
		{UserPath(win), `C:\Users\u\AppData\Roaming\bridle\settings.json`},
		{ConfigDir(win), `C:\Users\u\AppData\Roaming\bridle`},
		{DataDir(win), `C:\Users\u\AppData\Local\bridle`},
		{CacheDir(win), `C:\Users\u\AppData\Local\bridle\cache`},
		{UserPath(env(nil)), ""},
		{DataDir(env(map[string]string{"LocalAppData": "relative"})), ""},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
