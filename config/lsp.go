package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/internal/strictjson"
)

// LSP is the "lsp" object of the settings: the language servers bridle
// runs, in its box, to tell the model what an edit broke. The user's file
// may set all of it; a project's only what cannot run code of its own
// choosing (see projectLSP).
type LSP struct {
	// Enabled false turns every server off.
	Enabled *bool `json:"enabled,omitempty"`
	// WaitSeconds bounds how long an edit's result waits for the
	// diagnostics of the file's new version (5).
	WaitSeconds float64 `json:"wait_seconds,omitempty"`
	// IdleMinutes stops a server no session has used for that long (10).
	IdleMinutes float64 `json:"idle_minutes,omitempty"`
	// Servers are by language ("go", "typescript", "python", "c",
	// "rust", or a new name): over the defaults (DefaultServers), key by
	// key.
	Servers map[string]LSPServer `json:"servers,omitempty"`
}

// LSPServer is one language's server.
type LSPServer struct {
	// Enabled false turns the server off.
	Enabled *bool `json:"enabled,omitempty"`
	// Command is the program, a name looked up on PATH or an absolute
	// path; Args its arguments.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Files are the patterns of the files it serves, matched against a
	// file's name ("*.go").
	Files []string `json:"files,omitempty"`
	// RootMarkers are the names whose directory is the server's root:
	// the nearest directory at or above a file, inside the workspace,
	// that holds one ("go.mod"); none found, the workspace.
	RootMarkers []string `json:"root_markers,omitempty"`
	// InitializationOptions are sent with initialize as they are.
	InitializationOptions json.RawMessage `json:"initialization_options,omitempty"`
	// AllowHosts may be reached through the box's proxy (as the
	// sandbox's command.allow_hosts); empty: no network.
	AllowHosts []string `json:"allow_hosts,omitempty"`
	// MemoryMB and Processes override the sandbox's command limits.
	MemoryMB  int `json:"memory_mb,omitempty"`
	Processes int `json:"processes,omitempty"`
}

// Server is one language's server as the settings resolve it.
type Server struct {
	Language string
	// Commands are the programs to try, in order: the settings' command,
	// or the defaults' (pyright-langserver, then basedpyright-langserver).
	Commands []string
	Args     []string
	Files    []string
	// RootMarkers, InitOptions, AllowHosts, MemoryMB, Processes: as in
	// LSPServer.
	RootMarkers []string
	InitOptions json.RawMessage
	AllowHosts  []string
	MemoryMB    int
	Processes   int
	// Off says why the server does not run ("" when it may): turned off
	// by a settings file, or refused (Refused).
	Off string
	// Refused says the project's settings tried to choose what runs (a
	// command, its arguments, its network) without the user's trust: the
	// server does not run in this project, and Off says why.
	Refused bool
}

// DefaultServers are the servers bridle knows without settings, used
// when found on PATH.
func DefaultServers() map[string]LSPServer {
	return map[string]LSPServer{
		"go": {Command: "gopls", Files: []string{"*.go"}, RootMarkers: []string{"go.work", "go.mod"}},
		"typescript": {Command: "typescript-language-server", Args: []string{"--stdio"},
			Files:       []string{"*.ts", "*.tsx", "*.mts", "*.cts", "*.js", "*.jsx", "*.mjs", "*.cjs"},
			RootMarkers: []string{"tsconfig.json", "jsconfig.json", "package.json"}},
		"python": {Command: "pyright-langserver", Args: []string{"--stdio"}, Files: []string{"*.py", "*.pyi"},
			RootMarkers: []string{"pyrightconfig.json", "pyproject.toml", "setup.py", "setup.cfg"}},
		"c": {Command: "clangd", Files: []string{"*.c", "*.h", "*.cc", "*.cpp", "*.cxx", "*.hh", "*.hpp", "*.hxx"},
			RootMarkers: []string{"compile_commands.json", "compile_flags.txt", ".clangd"}},
		"rust": {Command: "rust-analyzer", Files: []string{"*.rs"}, RootMarkers: []string{"Cargo.toml"}},
	}
}

// fallbacks are the programs tried after a default's command.
var fallbacks = map[string][]string{"python": {"basedpyright-langserver"}}

// Wait is how long an edit's result waits for diagnostics.
func (l LSP) Wait() time.Duration {
	if l.WaitSeconds <= 0 {
		return 5 * time.Second
	}
	return time.Duration(l.WaitSeconds * float64(time.Second))
}

// Idle is how long an unused server is kept.
func (l LSP) Idle() time.Duration {
	if l.IdleMinutes <= 0 {
		return 10 * time.Minute
	}
	return time.Duration(l.IdleMinutes * float64(time.Minute))
}

// ParseLSP reads the "lsp" object; empty means the defaults. Keys are
// spelt exactly and unknown ones are errors, as in "sandbox".
func ParseLSP(raw []byte) (LSP, error) {
	var l LSP
	if len(raw) == 0 {
		return l, nil
	}
	if err := strictjson.Unmarshal(raw, &l); err != nil {
		return LSP{}, fmt.Errorf("the \"lsp\" settings are not valid: %w (see docs/code-intelligence.md)", err)
	}
	if l.WaitSeconds < 0 || l.IdleMinutes < 0 {
		return LSP{}, fmt.Errorf("the \"lsp\" settings are not valid: wait_seconds and idle_minutes must not be negative")
	}
	for _, name := range slices.Sorted(maps.Keys(l.Servers)) {
		s := l.Servers[name]
		if name == "" || strings.ContainsAny(name, " /\\") {
			return LSP{}, fmt.Errorf("the \"lsp\" settings are not valid: %q is not a language name (a word such as \"go\")", name)
		}
		if s.Command != "" && strings.ContainsRune(s.Command, '/') && !filepath.IsAbs(s.Command) {
			return LSP{}, fmt.Errorf("the \"lsp\" settings are not valid: servers.%s.command %q is neither a name looked up on PATH nor an absolute path", name, s.Command)
		}
		if s.MemoryMB < -1 || s.Processes < 0 {
			return LSP{}, fmt.Errorf("the \"lsp\" settings are not valid: servers.%s: memory_mb and processes must not be negative", name)
		}
		for _, p := range s.Files {
			if !validPattern(p) {
				return LSP{}, fmt.Errorf("the \"lsp\" settings are not valid: servers.%s.files: %q is not a file name pattern (\"*.go\")", name, p)
			}
		}
	}
	return l, nil
}

// validPattern says whether p is a pattern filepath.Match can use on a
// file's name.
func validPattern(p string) bool {
	if p == "" || strings.ContainsRune(p, '/') {
		return false
	}
	_, err := filepath.Match(p, "x")
	return err == nil
}

// Servers resolves the language servers that apply in this directory:
// the defaults, the user's and the project's "lsp" over them, sorted by
// language. A server missing its command or files is off, saying so.
// The error says the "lsp" section cannot be read; no server runs then.
func (c *Config) Servers() ([]Server, error) {
	if c.Err != nil {
		return nil, c.Err
	}
	l, err := ParseLSP(c.Settings.LSP)
	if err != nil {
		return nil, err
	}
	defaults := DefaultServers()
	langs := map[string]bool{}
	for k := range defaults {
		langs[k] = true
	}
	for k := range l.Servers {
		langs[k] = true
	}
	for k := range c.Settings.LSPRefused {
		langs[k] = true
	}
	var out []Server
	for _, lang := range slices.Sorted(maps.Keys(langs)) {
		d, isDefault := defaults[lang]
		u := l.Servers[lang]
		s := Server{Language: lang, Args: d.Args, Files: d.Files, RootMarkers: d.RootMarkers}
		if d.Command != "" {
			s.Commands = append([]string{d.Command}, fallbacks[lang]...)
		}
		if u.Command != "" {
			s.Commands, s.Args = []string{u.Command}, u.Args
		} else if u.Args != nil {
			s.Args = u.Args
		}
		if u.Files != nil {
			s.Files = u.Files
		}
		if u.RootMarkers != nil {
			s.RootMarkers = u.RootMarkers
		}
		s.InitOptions, s.AllowHosts, s.MemoryMB, s.Processes = u.InitializationOptions, u.AllowHosts, u.MemoryMB, u.Processes
		switch {
		case c.Settings.LSPRefused[lang] != "":
			s.Off, s.Refused = c.Settings.LSPRefused[lang], true
		case l.Enabled != nil && !*l.Enabled:
			s.Off = "turned off by \"lsp\": {\"enabled\": false} in the settings"
		case u.Enabled != nil && !*u.Enabled:
			s.Off = fmt.Sprintf("turned off by lsp.servers.%s.enabled in the settings", lang)
		case len(s.Commands) == 0:
			s.Off = fmt.Sprintf("no command: lsp.servers.%s.command is not set", lang)
		case len(s.Files) == 0 && !isDefault:
			s.Off = fmt.Sprintf("no files: lsp.servers.%s.files is not set", lang)
		}
		out = append(out, s)
	}
	return out, nil
}

// LSPSection is the "lsp" object that applies, parsed (the defaults when
// it cannot be read: Servers reports that error).
func (c *Config) LSPSection() LSP {
	l, _ := ParseLSP(c.Settings.LSP)
	return l
}

// projectLSP keeps of a project's "lsp" what a project may set: turning
// the section or a server off. Anything else (a command, its arguments,
// initialization options, files, root markers, hosts, limits, the waits)
// is taken out; a server the project tried to choose the program,
// arguments, initialization options or network of is refused (refused
// names it, with why): initialization options name programs too
// (typescript-language-server's tsserver.path and plugins, rust-analyzer's
// check.overrideCommand, gopls's build.env GOFLAGS=-toolexec). The rest
// is said in warnings. doc is the project's file,
// changed in place; path names it; remedy says how the user would let
// the project choose (listRemedy, or accepting the file as it is now).
//
// A null in place of the section, its "servers" or a server is taken out
// too: merged, it would clear what the user's own file sets there.
func projectLSP(doc map[string]any, path, remedy, userPath string) (refused map[string]string, warnings []string) {
	drop := func(key, why string) {
		warnings = append(warnings, fmt.Sprintf("%s: %q is ignored: %s", path, key, why))
	}
	const cleared = "a project's settings may not clear what your own settings file sets"
	if v, ok := doc["lsp"]; ok && v == nil {
		delete(doc, "lsp")
		drop("lsp", cleared)
	}
	section, ok := doc["lsp"].(map[string]any)
	if !ok {
		return nil, warnings
	}
	if v, ok := section["servers"]; ok && v == nil {
		delete(section, "servers")
		drop("lsp.servers", cleared)
	}
	for _, k := range slices.Sorted(maps.Keys(section)) {
		switch k {
		case "enabled":
			if section[k] != false {
				delete(section, k)
				drop("lsp.enabled", "a project's settings may only turn the language servers off")
			}
		case "servers":
		default:
			delete(section, k)
			drop("lsp."+k, fmt.Sprintf("only your own settings file (%s) may set it", userSettingsOrDefault(userPath)))
		}
	}
	servers, _ := section["servers"].(map[string]any)
	for _, lang := range slices.Sorted(maps.Keys(servers)) {
		if servers[lang] == nil {
			delete(servers, lang)
			drop("lsp.servers."+lang, cleared)
			continue
		}
		s, _ := servers[lang].(map[string]any)
		var chose []string
		for _, k := range slices.Sorted(maps.Keys(s)) {
			switch k {
			case "enabled":
				if s[k] != false {
					delete(s, k)
					drop("lsp.servers."+lang+".enabled", "a project's settings may only turn a server off")
				}
			case "command", "args", "initialization_options", "allow_hosts":
				chose = append(chose, "lsp.servers."+lang+"."+k)
				delete(s, k)
			default:
				delete(s, k)
				drop("lsp.servers."+lang+"."+k, fmt.Sprintf("only your own settings file (%s) may set it", userSettingsOrDefault(userPath)))
			}
		}
		if len(chose) > 0 {
			if refused == nil {
				refused = map[string]string{}
			}
			refused[lang] = fmt.Sprintf("refused: %s sets %s, and what a language server runs is code execution chosen by the repository's author, "+
				"so the %s server does not run in this project. Move these keys to your own settings file (%s), or %s",
				path, strings.Join(chose, ", "), lang, userSettingsOrDefault(userPath), remedy)
		}
	}
	return refused, warnings
}
