package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/workspace"
)

// contextWindow builds the context window from the "context" object of
// the settings and then BRIDLE_CONTEXT (env), each a JSON object of
// contextwin.Config fields ({"drop":0.7,"compact":0.9,"low_water":0.5,
// "keep_turns":3,"reserve":0}); a key the environment sets overrides the
// settings' one, and what neither sets takes the defaults.
func contextWindow(settings json.RawMessage, env string, models contextwin.Models) (*contextwin.Window, error) {
	var cfg contextwin.Config
	for _, src := range []struct{ name, conf string }{
		{`the "context" setting`, string(settings)},
		{"BRIDLE_CONTEXT", env},
	} {
		if strings.TrimSpace(src.conf) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(src.conf))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("%s is not a JSON object of drop, compact, low_water, keep_turns and reserve: %w", src.name, err)
		}
	}
	return contextwin.New(cfg, models)
}

// contextSettings is the "context" object of the settings that apply in
// cwd; unusable settings were already reported where models are resolved.
func (m *models) contextSettings(cwd string) json.RawMessage {
	s, err := workspace.LoadSettings(workspace.UserSettingsPath(m.getenv), cwd)
	if err != nil {
		return nil
	}
	return s.Context
}

// window tells the context window about a model: the catalogue's figures
// corrected by the settings that apply in cwd, and for a scripted model
// what its scenario declares. A model nobody describes gets the
// catalogue's conservative guess.
func (m *models) window(cwd string) contextwin.Models {
	return func(spec string) contextwin.Model {
		r, err := m.resolver(cwd)
		if err != nil {
			return contextwin.DefaultModel
		}
		pm, err := r.Model(spec)
		if err != nil {
			return contextwin.DefaultModel
		}
		cm := contextwin.Model{Window: pm.Window, MaxOutput: pm.MaxOutput, Tokenizer: string(pm.Tokenizer)}
		if name, id, _ := strings.Cut(spec, "/"); name == "scripted" {
			if sc, err := scripted.Load(m.scenarios, id); err == nil {
				if sc.Model.Window > 0 {
					cm.Window = sc.Model.Window
				}
				if sc.Model.MaxOutput > 0 {
					cm.MaxOutput = sc.Model.MaxOutput
				}
				if sc.Model.Tokenizer != "" {
					cm.Tokenizer = sc.Model.Tokenizer
				}
			}
		}
		return cm
	}
}
