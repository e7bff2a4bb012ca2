package workspace

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSettings(t *testing.T) {
	tests := []struct {
		name    string
		user    string // "" = no file
		project string
		want    Settings
		warn    []string
		err     string
	}{
		{
			name: "no files",
			want: Settings{},
		},
		{
			name: "user only",
			user: `{"model":"anthropic/claude-sonnet-4-5","providers":{"anthropic":{"api_key":"sk-ant-user"}}}`,
			want: Settings{
				Model:     "anthropic/claude-sonnet-4-5",
				Providers: map[string]ProviderSettings{"anthropic": {APIKey: "sk-ant-user"}},
			},
		},
		{
			name:    "project overrides user key by key",
			user:    `{"model":"openai/gpt-4.1","providers":{"openai":{"api_key_env":"WORK_OPENAI_KEY","base_url":"https://user.example/v1"}},"models":{"ollama/big":{"window":8192}}}`,
			project: `{"model":"ollama/qwen3-coder","providers":{"openai":{"base_url":"https://gateway.example/v1"},"vllm":{"base_url":"http://gpu-box:8000/v1"}},"models":{"ollama/big":{"max_output":1024}}}`,
			want: Settings{
				Model: "ollama/qwen3-coder",
				Providers: map[string]ProviderSettings{
					"openai": {APIKeyEnv: "WORK_OPENAI_KEY", BaseURL: "https://gateway.example/v1"},
					"vllm":   {BaseURL: "http://gpu-box:8000/v1"},
				},
				Models: map[string]ModelSettings{"ollama/big": {Window: 8192, MaxOutput: 1024}},
			},
		},
		{
			name:    "empty project file",
			user:    `{"model":"openai/gpt-4.1"}`,
			project: "\n",
			want:    Settings{Model: "openai/gpt-4.1"},
		},
		{
			name:    "unknown top-level key is a warning",
			project: `{"modle":"x"}`,
			want:    Settings{},
			warn:    []string{`unknown setting "modle" is ignored`},
		},
		{
			name: "misspelt provider key is an error naming the file",
			user: `{"providers":{"openai":{"base_ulr":"http://x"}}}`,
			err:  `user.json is not valid: in "providers": json: unknown field "base_ulr"`,
		},
		{
			name: "wrong type",
			user: `{"models":{"ollama/x":{"window":"big"}}}`,
			err:  "user.json is not valid",
		},
		{
			name:    "keys do not belong in a project",
			project: `{"providers":{"openai":{"api_key":"sk-oops"}}}`,
			err:     "sets providers.openai.api_key",
		},
		{
			name:    "instructions from both files, the user's first, not merged",
			user:    `{"instructions":"Answer in British English."}`,
			project: `{"instructions":["Never touch vendor/.", "  ", "Run make lint before you say done."],"context":{"drop":0.6}}`,
			want: Settings{
				Instructions: []Doc{
					{Path: "user", Text: "Answer in British English."},
					{Path: "project", Text: "- Never touch vendor/.\n- Run make lint before you say done."},
				},
				Context: []byte(`{"drop":0.6}`),
			},
		},
		{
			name:    "instructions of the wrong type",
			project: `{"instructions":{"a":1}}`,
			err:     `"instructions" must be a string or a list of strings`,
		},
		{
			name: "not JSON",
			user: `model = "x"`,
			err:  "user.json is not valid",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			userPath := filepath.Join(dir, "user.json")
			root := filepath.Join(dir, "project")
			var files []string
			if tt.user != "" {
				write(t, userPath, tt.user)
				files = append(files, userPath)
			}
			if tt.project != "" {
				write(t, ProjectSettingsPath(root), tt.project)
				files = append(files, ProjectSettingsPath(root))
			}
			got, err := LoadSettings(userPath, root)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Warnings) != len(tt.warn) {
				t.Fatalf("warnings = %q, want %q", got.Warnings, tt.warn)
			}
			for i, w := range tt.warn {
				if !strings.Contains(got.Warnings[i], w) {
					t.Errorf("warning %q does not say %q", got.Warnings[i], w)
				}
			}
			tt.want.Files = files
			got.Warnings = nil
			for i, d := range tt.want.Instructions {
				tt.want.Instructions[i].Path = map[string]string{"user": userPath, "project": ProjectSettingsPath(root)}[d.Path]
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestUserSettingsPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := UserSettingsPath(env(map[string]string{"HOME": "/home/u"})); got != "/home/u/.config/bridle/settings.json" {
		t.Errorf("HOME only: %q", got)
	}
	if got := UserSettingsPath(env(map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg"})); got != "/cfg/bridle/settings.json" {
		t.Errorf("XDG_CONFIG_HOME: %q", got)
	}
	if got := UserSettingsPath(env(nil)); got != "" {
		t.Errorf("no home: %q", got)
	}
}

func TestSandboxSettingsOnlyFromTheUser(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	user := filepath.Join(home, "settings.json")
	os.WriteFile(user, []byte(`{"sandbox": {"command": {"timeout_seconds": 30}}}`), 0o644)
	os.MkdirAll(filepath.Join(proj, ".bridle"), 0o755)
	os.WriteFile(ProjectSettingsPath(proj), []byte(`{"sandbox": {"command": {"allow_hosts": ["evil.example"]}}}`), 0o644)
	s, err := LoadSettings(user, proj)
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Sandbox) != `{"command":{"timeout_seconds":30}}` {
		t.Fatalf("sandbox = %s", s.Sandbox)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], `"sandbox" is ignored`) {
		t.Fatalf("warnings = %q", s.Warnings)
	}
}
