// Package resolve turns a model string ("anthropic/claude-sonnet-5-5",
// "ollama/qwen3-coder", "scripted/demo") into a ready client, from the
// settings files and the environment. It is the one place that reads
// provider keys and addresses, and the only package that imports every
// client, so that provider/ itself stays free of them.
package resolve

import (
	"context"
	"fmt"
	"io/fs"
	"iter"
	"net/http"
	"slices"
	"strings"

	bconfig "github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/anthropic"
	"github.com/bridle-dev/bridle/provider/openai"
	"github.com/bridle-dev/bridle/provider/scripted"
)

// The models bridle picks when only a key is set.
const (
	DefaultAnthropicModel = "anthropic/claude-sonnet-5-5"
	DefaultOpenAIModel    = "openai/gpt-4.1"
)

// Resolver opens models. The zero value reads nothing; set Getenv (usually
// os.Getenv) and Settings.
type Resolver struct {
	Settings bconfig.Settings
	Getenv   func(string) string
	// Scenarios holds the scripted scenarios bridle embeds; a scripted
	// model not found there is read as a file path.
	Scenarios fs.FS
	// HTTPClient is used by every client; nil gives each its own.
	HTTPClient *http.Client
}

func (r *Resolver) getenv(k string) string {
	if r.Getenv == nil {
		return ""
	}
	return strings.TrimSpace(r.Getenv(k))
}

// preset is what bridle knows of a provider out of the box.
type preset struct {
	api        string // "anthropic" or "openai"
	baseURL    string
	baseURLEnv string // overrides settings when set
	keyEnv     string
	tokenEnv   string // anthropic: ANTHROPIC_AUTH_TOKEN
	// needsKey: the default endpoint refuses anonymous requests.
	needsKey bool
	// legacyMaxTokens: the server may not know max_completion_tokens.
	legacyMaxTokens bool
}

var presets = map[string]preset{
	"anthropic": {api: "anthropic", baseURL: anthropic.DefaultBaseURL, baseURLEnv: "ANTHROPIC_BASE_URL", keyEnv: "ANTHROPIC_API_KEY", tokenEnv: "ANTHROPIC_AUTH_TOKEN", needsKey: true},
	"openai":    {api: "openai", baseURL: openai.OpenAIBaseURL, baseURLEnv: "OPENAI_BASE_URL", keyEnv: "OPENAI_API_KEY", needsKey: true},
	"ollama":    {api: "openai", baseURL: openai.OllamaBaseURL, legacyMaxTokens: true},
	"vllm":      {api: "openai", baseURL: openai.VLLMBaseURL, keyEnv: "VLLM_API_KEY", legacyMaxTokens: true},
	"llamacpp":  {api: "openai", baseURL: openai.LlamaCPPBaseURL, keyEnv: "LLAMA_API_KEY", legacyMaxTokens: true},
	"lmstudio":  {api: "openai", baseURL: openai.LMStudioBaseURL, legacyMaxTokens: true},
}

// Providers lists the provider names bridle knows without settings.
func Providers() []string {
	names := []string{"scripted"}
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Default returns the model a new session pins when none is asked for:
// BRIDLE_MODEL, then the settings' model, then the default Claude model if
// an Anthropic key is set, then the default OpenAI model if an OpenAI key
// is. It returns "" when nothing is configured.
func (r *Resolver) Default() string {
	if m := r.getenv("BRIDLE_MODEL"); m != "" {
		return m
	}
	if m := strings.TrimSpace(r.Settings.Model); m != "" {
		return m
	}
	if r.key("anthropic", presets["anthropic"]) != "" || r.getenv("ANTHROPIC_AUTH_TOKEN") != "" {
		return DefaultAnthropicModel
	}
	if r.key("openai", presets["openai"]) != "" {
		return DefaultOpenAIModel
	}
	return ""
}

// Unconfigured says what to set when no model is configured, and returns
// "" when one is. It is the text of ACP's auth method and of the -32000
// error a prompt gets.
func (r *Resolver) Unconfigured() string {
	if r.Default() != "" {
		return ""
	}
	return NotConfiguredMessage
}

// NotConfiguredMessage tells the user how to configure a model.
const NotConfiguredMessage = "No model provider is configured. Set ANTHROPIC_API_KEY (Claude) or OPENAI_API_KEY (OpenAI), " +
	"or BRIDLE_MODEL=ollama/qwen3-coder for a local Ollama (any provider/model-id works), " +
	"or \"model\" in ~/.config/bridle/settings.json; then restart the agent."

// Model returns what bridle knows of spec: the catalogue's figures,
// corrected by the settings' models section.
func (r *Resolver) Model(spec string) (provider.Model, error) {
	name, _, err := provider.ParseModel(spec)
	if err != nil {
		return provider.Model{}, err
	}
	spec = strings.TrimSpace(spec)
	api := "openai"
	if name == "scripted" {
		api = "scripted"
	} else if c, err := r.config(name); err == nil {
		api = c.api
	}
	m := provider.LookupModel(spec, api)
	if name == "scripted" {
		m = provider.Model{ID: spec, ModelSpec: bconfig.ModelSpec{Window: 200_000, MaxOutput: 8_192}, Known: true}
	}
	if ms, ok := r.Settings.Models[spec]; ok {
		if ms.Window > 0 {
			m.Window, m.Known = ms.Window, true
		}
		if ms.MaxOutput > 0 {
			m.MaxOutput = ms.MaxOutput
		}
		if ms.Tokenizer != "" {
			m.Tokenizer = ms.Tokenizer
		}
		if ms.Images {
			m.Images = true
		}
	}
	if m.MaxOutput > m.Window {
		m.MaxOutput = m.Window / 4
	}
	return m, nil
}

// config is a provider's resolved configuration.
type config struct {
	preset
	name    string
	key     string
	token   string
	headers map[string]string
}

func (r *Resolver) config(name string) (config, error) {
	p, known := presets[name]
	s, configured := r.Settings.Providers[name]
	if !known && !configured {
		return config{}, fmt.Errorf("unknown provider %q: use one of %s, or describe it under \"providers\" in settings.json with \"api\" (anthropic or openai) and \"base_url\"",
			name, strings.Join(Providers(), ", "))
	}
	if s.API != "" {
		if s.API != "anthropic" && s.API != "openai" {
			return config{}, fmt.Errorf("settings: providers.%s.api is %q; want \"anthropic\" or \"openai\"", name, s.API)
		}
		p.api = s.API
	}
	if !known {
		if p.api == "" {
			return config{}, fmt.Errorf("settings: providers.%s needs \"api\" (anthropic or openai) and \"base_url\"", name)
		}
		if s.BaseURL == "" {
			return config{}, fmt.Errorf("settings: providers.%s needs \"base_url\"", name)
		}
		p.legacyMaxTokens = p.api == "openai"
	}
	c := config{preset: p, name: name, headers: s.Headers}
	// Environment over settings over the built-in default.
	if s.BaseURL != "" {
		c.baseURL = s.BaseURL
	}
	if name == "ollama" {
		if host := r.getenv("OLLAMA_HOST"); host != "" {
			c.baseURL = ollamaURL(host)
		}
	}
	if p.baseURLEnv != "" {
		if u := r.getenv(p.baseURLEnv); u != "" {
			c.baseURL = u
		}
	}
	c.key = r.keyWith(c.keyEnv, s)
	if p.tokenEnv != "" {
		c.token = r.getenv(p.tokenEnv)
	}
	return c, nil
}

// key returns the API key for a provider: its variable, then the one the
// settings name, then the settings' key.
func (r *Resolver) key(name string, p preset) string {
	return r.keyWith(p.keyEnv, r.Settings.Providers[name])
}

func (r *Resolver) keyWith(keyEnv string, s bconfig.ProviderSettings) string {
	if keyEnv != "" {
		if k := r.getenv(keyEnv); k != "" {
			return k
		}
	}
	if s.APIKeyEnv != "" {
		if k := r.getenv(s.APIKeyEnv); k != "" {
			return k
		}
	}
	return s.APIKey
}

// ollamaURL turns OLLAMA_HOST ("127.0.0.1:11434", "http://box:11434")
// into the OpenAI-compatible base URL.
func ollamaURL(host string) string {
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	host = strings.TrimSuffix(host, "/")
	if !strings.HasSuffix(host, "/v1") {
		host += "/v1"
	}
	return host
}

// Open returns a client for spec, and what bridle knows of the model. The
// client does not retry; wrap it with provider.WithRetry, whose OnRetry
// the session uses to log each failed attempt.
func (r *Resolver) Open(ctx context.Context, spec string) (provider.Provider, provider.Model, error) {
	name, id, err := provider.ParseModel(spec)
	if err != nil {
		return nil, provider.Model{}, &provider.Error{Provider: "bridle", Kind: provider.ErrModel, Message: err.Error(), Err: err}
	}
	model, err := r.Model(spec)
	if err != nil {
		return nil, provider.Model{}, err
	}
	if name == "scripted" {
		sc, err := scripted.Load(r.Scenarios, id)
		if err != nil {
			return nil, model, &provider.Error{Provider: "scripted", Kind: provider.ErrModel, Message: err.Error(), Err: err}
		}
		return scripted.New(sc), model, nil
	}
	c, err := r.config(name)
	if err != nil {
		return nil, model, &provider.Error{Provider: name, Kind: provider.ErrModel, Message: err.Error(), Err: err}
	}
	official := c.baseURL == presets[name].baseURL && presets[name].needsKey
	if official && c.key == "" && c.token == "" {
		msg := fmt.Sprintf("no API key for %s: set %s", name, c.keyEnv)
		if c.tokenEnv != "" {
			msg += " (or " + c.tokenEnv + ")"
		}
		msg += fmt.Sprintf(", or providers.%s.api_key in ~/.config/bridle/settings.json, then restart the agent; or choose another model (BRIDLE_MODEL, e.g. ollama/qwen3-coder)", name)
		return nil, model, &provider.Error{Provider: name, Kind: provider.ErrNotConfigured, Message: msg}
	}
	var p provider.Provider
	switch c.api {
	case "anthropic":
		p = anthropic.New(anthropic.Config{
			Name: name, APIKey: c.key, AuthToken: c.token, BaseURL: c.baseURL,
			Headers: c.headers, HTTPClient: r.HTTPClient,
		})
	default:
		cfg := openai.Config{
			Name: name, APIKey: c.key, BaseURL: c.baseURL, Headers: c.headers,
			LegacyMaxTokens: c.legacyMaxTokens, HTTPClient: r.HTTPClient,
		}
		if name == "openai" {
			cfg.Organization, cfg.Project = r.getenv("OPENAI_ORG_ID"), r.getenv("OPENAI_PROJECT_ID")
		}
		p = openai.New(cfg)
	}
	return withMaxTokens{p, min(model.MaxOutput, maxResponseTokens)}, model, nil
}

// maxResponseTokens caps the response size bridle asks for when a request
// leaves it open: enough for long edits, without reserving a large share
// of the window for an answer that is rarely that long.
const maxResponseTokens = 32_000

// withMaxTokens fills in a request's max tokens from the catalogue.
type withMaxTokens struct {
	provider.Provider
	n int
}

func (w withMaxTokens) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	if req.MaxTokens <= 0 {
		req.MaxTokens = w.n
	}
	return w.Provider.Stream(ctx, req)
}

// Choices lists models worth offering in an editor's model selector: the
// configured default, and the current models of each provider that has a
// key.
func (r *Resolver) Choices() []string {
	var out []string
	if d := r.Default(); d != "" {
		out = append(out, d)
	}
	if r.key("anthropic", presets["anthropic"]) != "" || r.getenv("ANTHROPIC_AUTH_TOKEN") != "" {
		out = append(out, "anthropic/claude-opus-5-5", DefaultAnthropicModel, "anthropic/claude-haiku-5-5")
	}
	if r.key("openai", presets["openai"]) != "" {
		out = append(out, DefaultOpenAIModel, "openai/gpt-5.5", "openai/o4-mini")
	}
	seen := map[string]bool{}
	uniq := out[:0]
	for _, m := range out {
		if !seen[m] {
			seen[m] = true
			uniq = append(uniq, m)
		}
	}
	return uniq
}
