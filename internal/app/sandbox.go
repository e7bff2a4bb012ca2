package app

import "github.com/bridle-dev/bridle/config"

// Sandbox returns the "sandbox" settings, from the user's settings file
// only (a project's file may not change them). Unusable settings are
// logged and the defaults, the strictest, are used.
func (m *Models) Sandbox() config.Sandbox {
	c := m.Config("")
	if c.Err != nil {
		// Debug: every command that needs the settings says this error
		// itself (a session cannot start); the sandbox's defaults are
		// the strictest, so nothing is lost meanwhile.
		m.Log.Debug("settings not usable; the sandbox uses its defaults", "err", c.Err)
		return config.Sandbox{}
	}
	s, err := config.ParseSandbox(c.Settings.Sandbox)
	if err != nil {
		m.Log.Error("the sandbox uses its defaults", "err", err)
		return config.Sandbox{}
	}
	return s
}
