package app

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/provider/scripted"
)

// ContextWindow builds the context window from the "context" object of
// the settings and then BRIDLE_CONTEXT (env), each a JSON object of
// config.Context fields ({"drop":0.7,"compact":0.9,"low_water":0.5,
// "keep_turns":3,"reserve":0}); a key the environment sets overrides the
// settings' one, and what neither sets takes the defaults.
func ContextWindow(settings json.RawMessage, env string, models contextwin.Models) (*contextwin.Window, error) {
	cfg, err := config.ParseContext(settings, env)
	if err != nil {
		return nil, err
	}
	return contextwin.New(cfg, models)
}

// CheckContext reports thresholds that cannot work in the user's settings
// or BRIDLE_CONTEXT, which apply to every session: bridle refuses to
// start with them. A project's are checked when its sessions use them.
func (m *Models) CheckContext() error {
	c := m.Config("")
	if c.ContextErr != nil {
		return c.ContextErr
	}
	_, err := contextwin.New(c.Context, nil)
	return err
}

// windowEntry is the window made for a directory, and what it was made
// from.
type windowEntry struct {
	key string
	win *contextwin.Window
}

// WindowFor returns the context window for a session in cwd: the
// thresholds and the models' windows of the settings that apply there.
// It is made anew only when those change (a window keeps the counts of
// the fixed prefix, which are worth keeping), so it is cheap to ask for
// at every model call. Thresholds that cannot work in a project's
// settings are logged, and the defaults used.
func (m *Models) WindowFor(cwd string) *contextwin.Window {
	c := m.Config(cwd)
	key := windowKey(c)
	m.mu.Lock()
	e, ok := m.windows[cwd]
	m.mu.Unlock()
	if ok && e.key == key {
		return e.win
	}
	models := m.window(cwd)
	err := c.ContextErr
	var win *contextwin.Window
	if err == nil {
		win, err = contextwin.New(c.Context, models)
	}
	if err != nil {
		if m.Log != nil {
			m.Log.Error("the context settings are not usable; the window uses its defaults", "cwd", cwd, "err", err)
		}
		win, _ = contextwin.New(contextwin.DefaultConfig, models)
	}
	m.mu.Lock()
	if m.windows == nil || len(m.windows) >= 256 {
		m.windows = map[string]windowEntry{}
	}
	m.windows[cwd] = windowEntry{key: key, win: win}
	m.mu.Unlock()
	return win
}

// windowKey is what a window depends on: the thresholds and whatever
// decides a model's figures (the models section, the providers' APIs).
func windowKey(c *config.Config) string {
	apis := map[string]string{}
	for name, p := range c.Settings.Providers {
		apis[name] = p.API
	}
	errs := ""
	if c.Err != nil {
		errs += c.Err.Error()
	}
	if c.ContextErr != nil {
		errs += "\x00" + c.ContextErr.Error()
	}
	b, _ := json.Marshal(struct {
		Context config.Context
		Models  map[string]config.ModelSpec
		APIs    map[string]string
		Errs    string
	}{c.Context, c.Settings.Models, apis, errs})
	return string(b)
}

// window tells the context window about a model: the catalogue's figures
// corrected by the settings that apply in cwd, and for a scripted model
// what its scenario declares. A model nobody describes gets the
// catalogue's conservative guess.
func (m *Models) window(cwd string) contextwin.Models {
	return func(spec string) config.ModelSpec {
		r, err := m.resolver(cwd)
		if err != nil {
			return contextwin.DefaultModel
		}
		pm, err := r.Model(spec)
		if err != nil {
			return contextwin.DefaultModel
		}
		cm := pm.ModelSpec
		if !pm.Known {
			m.sayOnce(fmt.Sprintf("model %s is not in bridle's catalogue: its context window is taken as %d tokens (at most %d out); "+
				"if the server gives it another, declare it in settings.json: \"models\": {%q: {\"window\": TOKENS}} (see docs/configuration.md)",
				spec, cm.Window, cm.MaxOutput, spec))
		}
		if name, id, _ := strings.Cut(spec, "/"); name == "scripted" {
			if sc, err := scripted.Load(m.Scenarios, id); err == nil {
				if sc.Model.Window > 0 {
					cm.Window = sc.Model.Window
				}
				if sc.Model.MaxOutput > 0 {
					cm.MaxOutput = sc.Model.MaxOutput
				}
				if sc.Model.Tokenizer != "" {
					cm.Tokenizer = sc.Model.Tokenizer
				}
				cm.Images = sc.Model.Images
			}
		}
		return cm
	}
}

// sayOnce logs a warning once per process.
func (m *Models) sayOnce(line string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.said == nil {
		m.said = map[string]bool{}
	}
	if m.said[line] || m.Log == nil {
		return
	}
	m.said[line] = true
	m.Log.Warn(line)
}
