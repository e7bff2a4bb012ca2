package provider

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/config"
)

// Tokenizer names the token encoding a model family uses, so the context
// window can pick an exact counter where one exists and an estimate
// (corrected by reported usage) where none does.
type Tokenizer string

const (
	TokenizerClaude   Tokenizer = "claude"      // Anthropic; no public encoder
	TokenizerO200k    Tokenizer = "o200k_base"  // GPT-4o, GPT-4.1, GPT-5, o-series
	TokenizerCL100k   Tokenizer = "cl100k_base" // GPT-4, GPT-3.5
	TokenizerLlama3   Tokenizer = "llama3"
	TokenizerQwen     Tokenizer = "qwen"
	TokenizerMistral  Tokenizer = "mistral"
	TokenizerGemma    Tokenizer = "gemma"
	TokenizerDeepSeek Tokenizer = "deepseek"
	TokenizerUnknown  Tokenizer = "" // estimate from bytes
)

// Model is what bridle must know about a model to budget its window.
type Model struct {
	// ID is the full model string, "provider/model-id".
	ID string `json:"id"`
	// ModelSpec is the window, the response size and the tokenizer
	// family (one of the Tokenizer names).
	config.ModelSpec
	// Known is false when Window and MaxOutput are a conservative guess
	// because neither the catalogue nor the settings know the model.
	Known bool `json:"known"`
}

// Provider returns the provider part of m.ID ("anthropic").
func (m Model) Provider() string {
	p, _, _ := strings.Cut(m.ID, "/")
	return p
}

// Name returns the model id without the provider ("claude-sonnet-4-5").
func (m Model) Name() string {
	_, n, _ := strings.Cut(m.ID, "/")
	return n
}

// ParseModel splits a model string written "provider/model-id". The model
// id may itself contain slashes ("vllm/Qwen/Qwen3-Coder-30B-A3B-Instruct").
func ParseModel(s string) (providerName, modelID string, err error) {
	p, id, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || p == "" || id == "" {
		return "", "", fmt.Errorf("model %q is not written provider/model-id (for example anthropic/claude-sonnet-4-5, openai/gpt-4.1 or ollama/qwen3-coder)", s)
	}
	return p, id, nil
}

// family is one catalogue row: every model id starting with prefix.
type family struct {
	prefix    string
	window    int
	maxOutput int
	tokenizer Tokenizer
}

// The catalogue. Rows are matched by the longest prefix, so dated ids
// ("claude-haiku-4-5-20251001") and tags ("qwen3-coder:30b") find their
// family. Figures are the providers' published limits; where a provider
// offers a larger window only behind a beta flag, the default is listed,
// because overestimating a window makes requests fail while
// underestimating it only compacts a little early.
var anthropicModels = []family{
	{"claude-fable-5", 1_000_000, 128_000, TokenizerClaude},
	{"claude-opus-5", 1_000_000, 128_000, TokenizerClaude},
	{"claude-sonnet-5", 1_000_000, 128_000, TokenizerClaude},
	{"claude-haiku-5", 1_000_000, 128_000, TokenizerClaude},
	{"claude-opus-4-8", 1_000_000, 128_000, TokenizerClaude},
	{"claude-opus-4-7", 1_000_000, 128_000, TokenizerClaude},
	{"claude-opus-4-6", 1_000_000, 128_000, TokenizerClaude},
	{"claude-sonnet-4-6", 200_000, 64_000, TokenizerClaude},
	{"claude-opus-4-5", 200_000, 64_000, TokenizerClaude},
	{"claude-sonnet-4-5", 200_000, 64_000, TokenizerClaude},
	{"claude-haiku-4-5", 200_000, 64_000, TokenizerClaude},
	{"claude-opus-4-1", 200_000, 32_000, TokenizerClaude},
	{"claude-opus-4", 200_000, 32_000, TokenizerClaude},
	{"claude-sonnet-4", 200_000, 64_000, TokenizerClaude},
	{"claude-3-7-sonnet", 200_000, 64_000, TokenizerClaude},
	{"claude-3-5-haiku", 200_000, 8_192, TokenizerClaude},
	{"claude-", 200_000, 32_000, TokenizerClaude}, // any other Claude: every one has at least this
}

var openaiModels = []family{
	{"gpt-5.6", 1_050_000, 128_000, TokenizerO200k},
	{"gpt-5.5", 1_050_000, 128_000, TokenizerO200k},
	{"gpt-5.4", 1_050_000, 128_000, TokenizerO200k},
	{"gpt-5", 400_000, 128_000, TokenizerO200k},
	{"gpt-4.1", 1_047_576, 32_768, TokenizerO200k},
	{"gpt-4o", 128_000, 16_384, TokenizerO200k},
	{"o4-mini", 200_000, 100_000, TokenizerO200k},
	{"o3", 200_000, 100_000, TokenizerO200k},
	{"o1", 200_000, 100_000, TokenizerO200k},
	{"gpt-4-turbo", 128_000, 4_096, TokenizerCL100k},
	{"gpt-4", 8_192, 8_192, TokenizerCL100k},
	{"gpt-3.5-turbo", 16_385, 4_096, TokenizerCL100k},
}

// Open-weight models as Ollama, vLLM, llama.cpp and LM Studio name them.
// The window is the model's native one; a local server may run it with a
// smaller one (Ollama's OLLAMA_CONTEXT_LENGTH), which the settings can
// declare.
var openModels = []family{
	{"qwen3-coder", 262_144, 65_536, TokenizerQwen},
	{"qwen3", 131_072, 32_768, TokenizerQwen},
	{"qwen2.5-coder", 32_768, 8_192, TokenizerQwen},
	{"qwen2.5", 32_768, 8_192, TokenizerQwen},
	{"gpt-oss", 131_072, 32_768, TokenizerO200k},
	{"devstral", 131_072, 32_768, TokenizerMistral},
	{"mistral-small", 131_072, 32_768, TokenizerMistral},
	{"mistral", 32_768, 8_192, TokenizerMistral},
	{"llama3.3", 131_072, 8_192, TokenizerLlama3},
	{"llama3.2", 131_072, 8_192, TokenizerLlama3},
	{"llama3.1", 131_072, 8_192, TokenizerLlama3},
	{"llama-3", 131_072, 8_192, TokenizerLlama3},
	{"gemma3", 131_072, 8_192, TokenizerGemma},
	{"deepseek-r1", 131_072, 32_768, TokenizerDeepSeek},
	{"deepseek-coder-v2", 131_072, 8_192, TokenizerDeepSeek},
	{"phi4", 16_384, 4_096, TokenizerUnknown},
	{"codellama", 16_384, 4_096, TokenizerLlama3},
}

// Which families take images: every Claude and OpenAI family in the
// catalogue but these, and of the open-weight ones only these.
var (
	noImages   = map[string]bool{"claude-3-5-haiku": true, "gpt-4": true, "gpt-3.5-turbo": true}
	openImages = map[string]bool{"gemma3": true}
)

// Conservative guesses for models nobody described.
var unknownDefaults = map[string]Model{
	"anthropic": {ModelSpec: config.ModelSpec{Window: 200_000, MaxOutput: 32_000, Tokenizer: string(TokenizerClaude)}},
	"openai":    {ModelSpec: config.ModelSpec{Window: 128_000, MaxOutput: 16_384, Tokenizer: string(TokenizerO200k)}},
	"":          {ModelSpec: config.ModelSpec{Window: 32_768, MaxOutput: 8_192, Tokenizer: string(TokenizerUnknown)}},
}

// LookupModel returns what the catalogue knows of model id (written
// "provider/model-id"). api is the wire API the provider speaks
// ("anthropic" or "openai"). Anthropic's and OpenAI's own models are
// matched only for those providers (and the Anthropic API); any other
// provider speaking the OpenAI API (a local server, a gateway) is matched
// against open-weight model names only: its "gpt-5" may be anything, and
// overestimating a window makes requests fail. When nothing matches, it
// returns a conservative guess with Known false.
func LookupModel(id, api string) Model {
	prov, name, _ := strings.Cut(id, "/")
	var tables [][]family
	switch {
	case api == "anthropic":
		tables = [][]family{anthropicModels}
	case prov == "openai":
		tables = [][]family{openaiModels}
	default:
		tables = [][]family{openModels}
	}
	key := normalize(name)
	var best *family
	for _, t := range tables {
		for i := range t {
			f := &t[i]
			if strings.HasPrefix(key, f.prefix) && (best == nil || len(f.prefix) > len(best.prefix)) {
				best = f
			}
		}
		if best != nil {
			break
		}
	}
	if best != nil {
		images := !noImages[best.prefix]
		if slices.ContainsFunc(openModels, func(f family) bool { return f.prefix == best.prefix }) {
			images = openImages[best.prefix]
		}
		return Model{ID: id, ModelSpec: config.ModelSpec{Window: best.window, MaxOutput: best.maxOutput, Tokenizer: string(best.tokenizer), Images: images}, Known: true}
	}
	guess, ok := unknownDefaults[api]
	if !ok || (api == "openai" && prov != "openai") {
		guess = unknownDefaults[""]
	}
	guess.ID = id
	return guess
}

// normalize reduces a served model name to the catalogue's spelling:
// lower case, without an organisation ("Qwen/…"), a quantisation file
// suffix or an Ollama tag (":30b").
func normalize(name string) string {
	n := strings.ToLower(name)
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	n = strings.TrimSuffix(n, ".gguf")
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	// Hugging Face spells "Meta-Llama-3.1-8B" and "Llama-3.1"; Ollama "llama3.1".
	n = strings.TrimPrefix(n, "meta-")
	n = strings.Replace(n, "llama-3.", "llama3.", 1)
	return n
}
