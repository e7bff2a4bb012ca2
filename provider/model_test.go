package provider

import (
	"net/http"
	"testing"
	"time"
)

func TestLookupModel(t *testing.T) {
	tests := []struct {
		id, api   string
		window    int
		maxOutput int
		tokenizer Tokenizer
		known     bool
	}{
		{"anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, TokenizerClaude, true},
		{"anthropic/claude-haiku-4-5-20251001", "anthropic", 200_000, 64_000, TokenizerClaude, true},
		{"anthropic/claude-opus-4-1-20250805", "anthropic", 200_000, 32_000, TokenizerClaude, true},
		{"anthropic/claude-sonnet-5-5", "anthropic", 1_000_000, 128_000, TokenizerClaude, true},
		{"anthropic/claude-someday-9", "anthropic", 200_000, 32_000, TokenizerClaude, true},
		{"openai/gpt-4.1", "openai", 1_047_576, 32_768, TokenizerO200k, true},
		{"openai/gpt-4.1-mini-2025-04-14", "openai", 1_047_576, 32_768, TokenizerO200k, true},
		{"openai/gpt-4o", "openai", 128_000, 16_384, TokenizerO200k, true},
		{"openai/o4-mini", "openai", 200_000, 100_000, TokenizerO200k, true},
		{"openai/brand-new", "openai", 128_000, 16_384, TokenizerO200k, false},
		{"ollama/qwen3-coder", "openai", 262_144, 65_536, TokenizerQwen, true},
		{"ollama/qwen3-coder:30b", "openai", 262_144, 65_536, TokenizerQwen, true},
		{"vllm/Qwen/Qwen3-Coder-30B-A3B-Instruct", "openai", 262_144, 65_536, TokenizerQwen, true},
		{"llamacpp/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "openai", 131_072, 8_192, TokenizerLlama3, true},
		{"ollama/gpt-oss:20b", "openai", 131_072, 32_768, TokenizerO200k, true},
		{"lmstudio/some-local-model", "openai", 32_768, 8_192, TokenizerUnknown, false},
	}
	for _, tt := range tests {
		m := LookupModel(tt.id, tt.api)
		if m.ID != tt.id || m.Window != tt.window || m.MaxOutput != tt.maxOutput || m.Tokenizer != string(tt.tokenizer) || m.Known != tt.known {
			t.Errorf("LookupModel(%q) = %+v, want window %d output %d tokenizer %q known %v", tt.id, m, tt.window, tt.maxOutput, tt.tokenizer, tt.known)
		}
	}
}

func TestParseModel(t *testing.T) {
	tests := []struct {
		in, prov, id string
		ok           bool
	}{
		{"anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", true},
		{"vllm/Qwen/Qwen3-Coder", "vllm", "Qwen/Qwen3-Coder", true},
		{" ollama/qwen3-coder ", "ollama", "qwen3-coder", true},
		{"gpt-4.1", "", "", false},
		{"openai/", "", "", false},
		{"/x", "", "", false},
	}
	for _, tt := range tests {
		p, id, err := ParseModel(tt.in)
		if (err == nil) != tt.ok || p != tt.prov || id != tt.id {
			t.Errorf("ParseModel(%q) = %q, %q, %v", tt.in, p, id, err)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": now.Add(30 * time.Second).Format(http.TimeFormat)}, 30 * time.Second},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "-3"}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := RetryAfter(h, now); got != tt.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}
