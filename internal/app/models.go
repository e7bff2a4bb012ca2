package app

import (
	"context"
	"io/fs"
	"log/slog"
	"sync"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/resolve"
)

// Models resolves model strings for sessions: --model (or BRIDLE_MODEL)
// first, then the settings that apply in the session's directory, then
// the keys in the environment.
type Models struct {
	Flag      string // --model, else $BRIDLE_MODEL
	Getenv    func(string) string
	Scenarios fs.FS
	Log       *slog.Logger
	// Wrap, if set, wraps every client opened (request recording).
	Wrap func(provider.Provider) provider.Provider
	// Hidden returns what the file tools hide (config.Loader.Hidden):
	// the project's settings and AGENTS.md files are read through the
	// same confinement.
	Hidden func() (hidden, own []string)

	loadOnce sync.Once
	loader   *config.Loader

	mu      sync.Mutex
	warned  map[string]uint64 // cwd → the config version whose warnings were logged
	skipped map[string]uint64 // cwd → the version whose skipped instruction files were logged
	windows map[string]windowEntry
	said    map[string]bool // the lines logged
}

// Config returns the configuration that applies in cwd, read anew only
// when one of its files changed; its warnings are logged once per
// version.
func (m *Models) Config(cwd string) *config.Config {
	m.loadOnce.Do(func() { m.loader = &config.Loader{Getenv: m.Getenv, Hidden: m.Hidden} })
	c := m.loader.For(cwd)
	m.logOnce(&m.warned, cwd, c.Version, "", c.Settings.Warnings)
	return c
}

// resolver resolves models with the settings that apply in cwd.
func (m *Models) resolver(cwd string) (*resolve.Resolver, error) {
	c := m.Config(cwd)
	if c.Err != nil {
		return nil, &provider.Error{Provider: "bridle", Kind: provider.ErrNotConfigured, Message: c.Err.Error(), Err: c.Err}
	}
	return &resolve.Resolver{Settings: c.Settings, Getenv: m.Getenv, Scenarios: m.Scenarios}, nil
}

// DefaultFor is the model a new session in cwd pins; "" when none is
// configured.
func (m *Models) DefaultFor(cwd string) string {
	if m.Flag != "" {
		return m.Flag
	}
	r, err := m.resolver(cwd)
	if err != nil {
		// Debug: the session that needs a model says why it has none.
		m.Log.Debug("settings not usable", "err", err)
		return ""
	}
	return r.Default()
}

// Unconfigured says what to set when no model is configured for cwd, or
// returns "".
func (m *Models) Unconfigured(cwd string) string {
	if m.DefaultFor(cwd) != "" {
		return ""
	}
	if c := m.Config(cwd); c.Err != nil {
		return c.Err.Error()
	}
	return resolve.NotConfiguredMessage
}

// Open returns the client for a session's pinned model.
func (m *Models) Open(ctx context.Context, spec, cwd string) (provider.Provider, error) {
	r, err := m.resolver(cwd)
	if err != nil {
		return nil, err
	}
	if spec == "" {
		return nil, &provider.Error{Provider: "bridle", Kind: provider.ErrNotConfigured, Message: resolve.NotConfiguredMessage}
	}
	p, _, err := r.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	if m.Wrap != nil {
		p = m.Wrap(p)
	}
	return p, nil
}

// Choices are models offered in the editor's model selector: the default
// of every provider that has a key.
func (m *Models) Choices(cwd string) []string {
	r, err := m.resolver(cwd)
	if err != nil {
		return nil
	}
	return r.Choices()
}

// ProjectInstructions returns what the project and the user tell the
// model in cwd: the AGENTS.md files that apply, then the "instructions"
// of the settings files, with secrets redacted like tool output. They
// are rendered and redacted once per version of the files; an AGENTS.md
// that was not read (a link leading out of the repository, a hidden path)
// is logged once per version.
func (m *Models) ProjectInstructions(cwd string) string {
	c := m.Config(cwd)
	if c.Err != nil && m.Log != nil {
		m.Log.Debug("settings not usable; their instructions are left out", "err", c.Err)
	}
	text, skipped := c.Instructions()
	m.logOnce(&m.skipped, cwd, c.Version, "instructions left out: ", skipped)
	return text
}

// logOnce logs lines, each after prefix, unless seen says they were
// logged for this version of cwd's configuration already.
func (m *Models) logOnce(seen *map[string]uint64, cwd string, version uint64, prefix string, lines []string) {
	m.mu.Lock()
	if *seen == nil {
		*seen = map[string]uint64{}
	}
	fresh := (*seen)[cwd] != version
	(*seen)[cwd] = version
	m.mu.Unlock()
	if !fresh {
		return
	}
	for _, l := range lines {
		// The user's settings apply in every directory: a line about
		// them is said once, not once per directory.
		m.sayOnce(prefix + l)
	}
}
