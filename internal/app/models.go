package main

import (
	"context"
	"io/fs"
	"log/slog"
	"os"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/resolve"
	"github.com/bridle-dev/bridle/sandbox/redact"
	"github.com/bridle-dev/bridle/workspace"
)

// models resolves model strings for sessions: --model (or BRIDLE_MODEL)
// first, then the settings files of the session's project and the user,
// then the keys in the environment.
type models struct {
	flag      string // --model, else $BRIDLE_MODEL
	getenv    func(string) string
	scenarios fs.FS
	log       *slog.Logger
}

// resolver reads the settings that apply in cwd. Settings are read anew
// for every use, so an edited file counts from the next prompt on.
func (m *models) resolver(cwd string) (*resolve.Resolver, error) {
	s, err := workspace.LoadSettings(workspace.UserSettingsPath(m.getenv), cwd)
	if err != nil {
		return nil, &provider.Error{Provider: "bridle", Kind: provider.ErrNotConfigured, Message: err.Error(), Err: err}
	}
	for _, w := range s.Warnings {
		m.log.Warn(w)
	}
	return &resolve.Resolver{Settings: s, Getenv: m.getenv, Scenarios: m.scenarios}, nil
}

// defaultFor is the model a new session in cwd pins; "" when none is
// configured.
func (m *models) defaultFor(cwd string) string {
	if m.flag != "" {
		return m.flag
	}
	r, err := m.resolver(cwd)
	if err != nil {
		m.log.Warn("settings not usable", "err", err)
		return ""
	}
	return r.Default()
}

// unconfigured says what to set when no model is configured for cwd, or
// returns "".
func (m *models) unconfigured(cwd string) string {
	if m.defaultFor(cwd) != "" {
		return ""
	}
	if _, err := m.resolver(cwd); err != nil {
		return err.Error()
	}
	return resolve.NotConfiguredMessage
}

// open returns the client for a session's pinned model.
func (m *models) open(ctx context.Context, spec, cwd string) (provider.Provider, error) {
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
	return maybeRecord(p), nil
}

// choices are models offered in the editor's model selector: the default
// of every provider that has a key.
func (m *models) choices(cwd string) []string {
	r, err := m.resolver(cwd)
	if err != nil {
		return nil
	}
	return r.Choices()
}

// projectInstructions returns what the project and the user tell the
// model in cwd: the AGENTS.md files that apply, then the "instructions" of
// the settings files. Secrets in them are redacted like tool output.
func (m *models) projectInstructions(cwd string) string {
	var docs []workspace.Doc
	if w, err := workspace.Open(cwd, nil); err == nil {
		docs = w.Instructions()
	}
	if s, err := workspace.LoadSettings(workspace.UserSettingsPath(m.getenv), cwd); err == nil {
		docs = append(docs, s.Instructions...)
	} else {
		m.log.Warn("settings not usable; their instructions are left out", "err", err)
	}
	text := workspace.Render(docs)
	if text == "" {
		return ""
	}
	r := redact.New(os.Environ())
	r.LoadDotEnvFiles(cwd)
	return r.Redact(text)
}
