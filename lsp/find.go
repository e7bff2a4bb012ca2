package lsp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bridle-dev/bridle/config"
)

// Status is what `bridle doctor` says of one language's server.
type Status struct {
	Language string `json:"language"`
	// State is "found", "missing", "off" or "refused".
	State string `json:"state"`
	// Path is the program found (State "found").
	Path string `json:"path,omitempty"`
	// Detail says why it is missing, off or refused, and what to do.
	Detail string `json:"detail,omitempty"`
}

// installHints say how to get the default servers.
var installHints = map[string]string{
	"gopls":                      "go install golang.org/x/tools/gopls@latest",
	"typescript-language-server": "npm install -g typescript-language-server typescript",
	"pyright-langserver":         "npm install -g pyright (or pip install basedpyright)",
	"clangd":                     "your system's clangd package",
	"rust-analyzer":              "rustup component add rust-analyzer",
}

// Statuses says of each server whether it would run: found (where),
// missing from PATH, or off or refused by the settings. look finds a
// program on PATH (exec.LookPath).
func Statuses(servers []config.Server, look func(string) (string, error)) []Status {
	out := make([]Status, 0, len(servers))
	for _, s := range servers {
		st := Status{Language: s.Language}
		switch path, err := Find(s, look); {
		case s.Refused:
			st.State, st.Detail = "refused", s.Off
		case s.Off != "":
			st.State, st.Detail = "off", s.Off
		case err != nil:
			st.State, st.Detail = "missing", err.Error()
		default:
			st.State, st.Path = "found", path
		}
		out = append(out, st)
	}
	return out
}

// Find returns the program that runs s: the first of its commands found
// (a name on PATH, or an absolute path to an executable file).
func Find(s config.Server, look func(string) (string, error)) (string, error) {
	if len(s.Commands) == 0 {
		return "", errors.New("no command is configured")
	}
	for _, c := range s.Commands {
		if filepath.IsAbs(c) {
			if fi, err := os.Stat(c); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return c, nil
			}
			continue
		}
		if p, err := look(c); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs, nil
			}
		}
	}
	msg := fmt.Sprintf("%s not found on PATH", strings.Join(s.Commands, " or "))
	if filepath.IsAbs(s.Commands[0]) {
		msg = fmt.Sprintf("%s is not an executable file", s.Commands[0])
	}
	if h := installHints[s.Commands[0]]; h != "" {
		msg += " (install: " + h + ")"
	}
	return "", errors.New(msg)
}
