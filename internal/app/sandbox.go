package app

import "github.com/bridle-dev/bridle/sandbox"

// Sandbox returns the "sandbox" settings, from the user's settings file
// only (a project's file may not change them). Unusable settings are
// logged and the defaults, the strictest, are used.
func (m *Models) Sandbox() sandbox.Settings {
	c := m.Config("")
	if c.Err != nil {
		m.Log.Error("settings not usable; the sandbox uses its defaults", "err", c.Err)
		return sandbox.Settings{}
	}
	s, err := sandbox.ParseSettings(c.Settings.Sandbox)
	if err != nil {
		m.Log.Error("the sandbox uses its defaults", "err", err)
		return sandbox.Settings{}
	}
	return s
}
