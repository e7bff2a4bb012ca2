// Package config holds bridle's settings and the rules for reading them:
// the user's settings.json, the project's .bridle/settings.json and the
// environment, resolved per session directory (For) and cached by the
// files' identity. It holds data only: it imports no tool, provider or
// session package; internal/app turns what it resolves into tools,
// providers and the context window.
package config
