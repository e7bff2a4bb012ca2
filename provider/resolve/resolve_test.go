package resolve

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	bconfig "github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/providertest"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		settings bconfig.Settings
		want     string
	}{
		{"nothing", nil, bconfig.Settings{}, ""},
		{"anthropic key", map[string]string{"ANTHROPIC_API_KEY": "k"}, bconfig.Settings{}, DefaultAnthropicModel},
		{"anthropic gateway token", map[string]string{"ANTHROPIC_AUTH_TOKEN": "t"}, bconfig.Settings{}, DefaultAnthropicModel},
		{"openai key", map[string]string{"OPENAI_API_KEY": "k"}, bconfig.Settings{}, DefaultOpenAIModel},
		{"both keys: Claude first", map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, bconfig.Settings{}, DefaultAnthropicModel},
		{"key in user settings", nil, bconfig.Settings{Providers: map[string]bconfig.ProviderSettings{"openai": {APIKey: "k"}}}, DefaultOpenAIModel},
		{"key variable named in settings", map[string]string{"WORK_KEY": "k"}, bconfig.Settings{Providers: map[string]bconfig.ProviderSettings{"anthropic": {APIKeyEnv: "WORK_KEY"}}}, DefaultAnthropicModel},
		{"settings model beats keys", map[string]string{"ANTHROPIC_API_KEY": "k"}, bconfig.Settings{Model: "ollama/qwen3-coder"}, "ollama/qwen3-coder"},
		{"BRIDLE_MODEL beats settings", map[string]string{"BRIDLE_MODEL": "openai/gpt-4o"}, bconfig.Settings{Model: "ollama/qwen3-coder"}, "openai/gpt-4o"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Resolver{Settings: tt.settings, Getenv: envOf(tt.env)}
			if got := r.Default(); got != tt.want {
				t.Errorf("Default() = %q, want %q", got, tt.want)
			}
			msg := r.Unconfigured()
			if (msg != "") != (tt.want == "") {
				t.Errorf("Unconfigured() = %q with default %q", msg, tt.want)
			}
			if msg != "" && (!strings.Contains(msg, "ANTHROPIC_API_KEY") || !strings.Contains(msg, "OPENAI_API_KEY") || !strings.Contains(msg, "BRIDLE_MODEL")) {
				t.Errorf("message does not say what to set: %q", msg)
			}
		})
	}
}

// TestOpenReachesTheRightServer opens each kind of provider against a
// local server standing in for it and checks where the request went and
// with which credentials.
func TestOpenReachesTheRightServer(t *testing.T) {
	anthropicSSE := providertest.Load(t, "../../testdata/anthropic/text.sse")
	openaiSSE := providertest.Load(t, "../../testdata/openai/text.sse")
	tests := []struct {
		name     string
		spec     string
		body     string
		env      func(url string) map[string]string
		settings func(url string) bconfig.Settings
		path     string
		auth     string
		header   [2]string
	}{
		{
			name: "anthropic via ANTHROPIC_BASE_URL",
			spec: "anthropic/claude-sonnet-4-5", body: anthropicSSE,
			env: func(u string) map[string]string {
				return map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": u}
			},
			path: "/v1/messages", auth: "Bearer sk-ant",
		},
		{
			name: "openai via OPENAI_BASE_URL",
			spec: "openai/gpt-4.1", body: openaiSSE,
			env: func(u string) map[string]string {
				return map[string]string{"OPENAI_API_KEY": "sk-oai", "OPENAI_BASE_URL": u + "/v1"}
			},
			path: "/v1/chat/completions", auth: "Bearer sk-oai",
		},
		{
			name: "ollama via OLLAMA_HOST, no key even with OPENAI_API_KEY set",
			spec: "ollama/qwen3-coder", body: openaiSSE,
			env: func(u string) map[string]string {
				return map[string]string{"OPENAI_API_KEY": "sk-oai", "OLLAMA_HOST": strings.TrimPrefix(u, "http://")}
			},
			path: "/v1/chat/completions", auth: "",
		},
		{
			name: "vllm at a base URL from settings, key from VLLM_API_KEY",
			spec: "vllm/Qwen/Qwen3-Coder-30B-A3B-Instruct", body: openaiSSE,
			env: func(string) map[string]string { return map[string]string{"VLLM_API_KEY": "vk"} },
			settings: func(u string) bconfig.Settings {
				return bconfig.Settings{Providers: map[string]bconfig.ProviderSettings{"vllm": {BaseURL: u + "/v1"}}}
			},
			path: "/v1/chat/completions", auth: "Bearer vk",
		},
		{
			name: "a gateway defined in settings, with a header",
			spec: "gateway/claude-sonnet-4-5", body: anthropicSSE,
			env: func(string) map[string]string { return map[string]string{"GW_KEY": "gk"} },
			settings: func(u string) bconfig.Settings {
				return bconfig.Settings{Providers: map[string]bconfig.ProviderSettings{"gateway": {
					API: "anthropic", BaseURL: u, APIKeyEnv: "GW_KEY", Headers: map[string]string{"X-Team": "core"},
				}}}
			},
			path: "/v1/messages", auth: "Bearer gk", header: [2]string{"X-Team", "core"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Reply{Body: tt.body})
			r := &Resolver{Getenv: envOf(tt.env(srv.URL))}
			if tt.settings != nil {
				r.Settings = tt.settings(srv.URL)
			}
			p, model, err := r.Open(context.Background(), tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if model.ID != tt.spec || model.Window == 0 {
				t.Errorf("model = %+v", model)
			}
			prov, id, _ := provider.ParseModel(tt.spec)
			if p.Name() != prov {
				t.Errorf("Name() = %q, want %q", p.Name(), prov)
			}
			var c provider.Collector
			for d, err := range p.Stream(context.Background(), provider.Request{Model: id, Messages: []provider.Message{{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: "hi"}}}}}) {
				if err != nil {
					t.Fatal(err)
				}
				c.Add(d)
			}
			if !strings.HasPrefix(c.Response().Text, "Hello") {
				t.Errorf("text = %q", c.Response().Text)
			}
			got := srv.Requests()[0]
			if got.Path != tt.path || got.Header.Get("Authorization") != tt.auth {
				t.Errorf("request %s with Authorization %q; want %s with %q", got.Path, got.Header.Get("Authorization"), tt.path, tt.auth)
			}
			if tt.header[0] != "" && got.Header.Get(tt.header[0]) != tt.header[1] {
				t.Errorf("header %s = %q", tt.header[0], got.Header.Get(tt.header[0]))
			}
			if !strings.Contains(string(got.Body), `_tokens":32000`) {
				t.Errorf("max tokens not filled in from the catalogue: %s", got.Body)
			}
			if !strings.Contains(string(got.Body), `"model":"`+id+`"`) {
				t.Errorf("body does not name model %q: %s", id, got.Body)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		env      map[string]string
		settings bconfig.Settings
		kind     provider.ErrorKind
		says     string
	}{
		{"no key for anthropic", "anthropic/claude-sonnet-4-5", nil, bconfig.Settings{}, provider.ErrNotConfigured, "set ANTHROPIC_API_KEY"},
		{"no key for openai", "openai/gpt-4.1", nil, bconfig.Settings{}, provider.ErrNotConfigured, "set OPENAI_API_KEY"},
		{"not provider/model", "gpt-4.1", nil, bconfig.Settings{}, provider.ErrModel, "provider/model-id"},
		{"unknown provider", "acme/x", nil, bconfig.Settings{}, provider.ErrModel, "anthropic, llamacpp, lmstudio, ollama, openai, scripted, vllm"},
		{"custom provider without api", "acme/x", nil, bconfig.Settings{Providers: map[string]bconfig.ProviderSettings{"acme": {BaseURL: "http://x"}}}, provider.ErrModel, "needs \"api\""},
		{"bad api", "acme/x", nil, bconfig.Settings{Providers: map[string]bconfig.ProviderSettings{"acme": {API: "grpc", BaseURL: "http://x"}}}, provider.ErrModel, "want \"anthropic\" or \"openai\""},
		{"unknown scenario", "scripted/nope", nil, bconfig.Settings{}, provider.ErrModel, "no such embedded scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Resolver{Settings: tt.settings, Getenv: envOf(tt.env), Scenarios: fstest.MapFS{}}
			_, _, err := r.Open(context.Background(), tt.spec)
			pe, ok := provider.AsError(err)
			if !ok || pe.Kind != tt.kind || !strings.Contains(pe.Error(), tt.says) {
				t.Fatalf("error = %v, want kind %s saying %q", err, tt.kind, tt.says)
			}
		})
	}
}

func TestOpenScripted(t *testing.T) {
	fsys := fstest.MapFS{"hello.json": {Data: []byte(`{"name":"hello","turns":[{"calls":[{"text":"Hi there"}]}]}`)}}
	r := &Resolver{Scenarios: fsys}
	p, _, err := r.Open(context.Background(), "scripted/hello")
	if err != nil {
		t.Fatal(err)
	}
	var c provider.Collector
	for d, err := range p.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: "hi"}}}}}) {
		if err != nil {
			t.Fatal(err)
		}
		c.Add(d)
	}
	if c.Response().Text != "Hi there" {
		t.Errorf("text = %q", c.Response().Text)
	}
}

func TestModelSettingsOverride(t *testing.T) {
	r := &Resolver{Settings: bconfig.Settings{Models: map[string]bconfig.ModelSpec{
		"ollama/qwen3-coder": {Window: 32768},
		"lmstudio/mystery":   {Window: 65536, MaxOutput: 4096, Tokenizer: "qwen"},
	}}}
	m, err := r.Model("ollama/qwen3-coder")
	if err != nil || m.Window != 32768 || m.MaxOutput > 32768 || !m.Known {
		t.Errorf("declared smaller window: %+v %v", m, err)
	}
	m, _ = r.Model("lmstudio/mystery")
	if m.Window != 65536 || m.MaxOutput != 4096 || m.Tokenizer != string(provider.TokenizerQwen) || !m.Known {
		t.Errorf("declared unknown model: %+v", m)
	}
	m, _ = r.Model("lmstudio/other")
	if m.Known {
		t.Errorf("undeclared unknown model claims to be known: %+v", m)
	}
}
