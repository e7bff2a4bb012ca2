package openai

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/providertest"
)

const testdata = "../../testdata/openai/"

// target is the client as the shared checks make it.
func target() providertest.Target {
	return providertest.Target{Name: "openai", Model: "gpt-4.1", New: func(baseURL, name string) provider.Provider {
		return New(Config{Name: name, APIKey: "sk-test", BaseURL: baseURL + "/v1"})
	}}
}

func TestStreamDecodes(t *testing.T) {
	load := func(file string) providertest.Reply {
		return providertest.Reply{Body: providertest.Load(t, testdata+file)}
	}
	target().Decodes(t, []providertest.Decoded{
		{
			Name:     "text.sse",
			Provider: "openai",
			Reply:    load("text.sse"),
			Text:     "Hello! How can I help?",
			Stop:     provider.StopEndTurn,
			Usage:    provider.Usage{InputTokens: 93, OutputTokens: 9, CacheReadTokens: 1024},
		},
		{
			Name:     "tool_calls.sse",
			Provider: "openai",
			Reply:    load("tool_calls.sse"),
			Calls: []provider.ToolCall{
				{ID: "call_DdmO9pD3xa9XTPNJ32zg2hcA", Name: "read_file", Input: json.RawMessage(`{"path": "README.md"}`)},
				{ID: "call_0OSswGu4XvOUz9Rz0Rp3Qb1n", Name: "read_file", Input: json.RawMessage(`{"path": "go.mod"}`)},
			},
			Stop:  provider.StopToolUse,
			Usage: provider.Usage{InputTokens: 320, OutputTokens: 52},
		},
		{
			// Ollama sends each call whole, both at index 0, and its
			// reasoning under "reasoning".
			Name:     "ollama_tool_call.sse",
			Provider: "ollama",
			Reply:    load("ollama_tool_call.sse"),
			Thinking: "The user wants the README; read it.",
			Calls: []provider.ToolCall{
				{ID: "call_mz2fh6vb", Name: "read_file", Input: json.RawMessage(`{"path":"README.md"}`)},
				{ID: "call_q1w0wq8d", Name: "read_file", Input: json.RawMessage(`{"path":"go.mod"}`)},
			},
			Stop:  provider.StopToolUse,
			Usage: provider.Usage{InputTokens: 210, OutputTokens: 40},
		},
	})
}

// TestRequestOnTheWire checks what bridle sends: one system message, the
// tools as functions with their schema, tool results split out into tool
// messages right after the assistant's calls, usage asked for.
func TestRequestOnTheWire(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse")})
	schema := `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`
	req := provider.Request{
		Model:     "gpt-4.1",
		MaxTokens: 2048,
		System:    []provider.SystemBlock{{Text: "You are bridle."}, {Text: "Use tabs.", Cache: true}},
		Tools:     []provider.Tool{{Name: "read_file", Description: "Read a file", InputSchema: json.RawMessage(schema)}},
		Messages: []provider.Message{
			{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: "Read two files"}}},
			{Role: provider.RoleAssistant, Parts: []provider.Part{
				{Kind: provider.PartThinking, Text: "hmm", Signature: "x"},
				{Kind: provider.PartText, Text: "Reading."},
				{Kind: provider.PartToolUse, ToolCallID: "call_1", ToolName: "read_file", Input: json.RawMessage(`{"path":"a"}`)},
				{Kind: provider.PartToolUse, ToolCallID: "call_2", ToolName: "read_file", Input: json.RawMessage(`{"path":"b"}`)},
			}},
			{Role: provider.RoleUser, Parts: []provider.Part{
				{Kind: provider.PartToolResult, ToolCallID: "call_1", Text: "contents of a"},
				{Kind: provider.PartToolResult, ToolCallID: "call_2", Text: "no such file", IsError: true},
				{Kind: provider.PartText, Text: "And be quick."},
			}},
		},
	}
	c := New(Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Organization: "org-1"})
	got := providertest.Send(t, srv, c, req)
	if got.Method != "POST" || got.Path != "/v1/chat/completions" {
		t.Errorf("sent %s %s, want POST /v1/chat/completions", got.Method, got.Path)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer sk-test" {
		t.Errorf("Authorization = %q", h)
	}
	if h := got.Header.Get("OpenAI-Organization"); h != "org-1" {
		t.Errorf("OpenAI-Organization = %q", h)
	}
	var body struct {
		Model               string `json:"model"`
		Stream              bool   `json:"stream"`
		MaxCompletionTokens int    `json:"max_completion_tokens"`
		MaxTokens           *int   `json:"max_tokens"`
		StreamOptions       struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if body.Model != "gpt-4.1" || !body.Stream || !body.StreamOptions.IncludeUsage || body.MaxCompletionTokens != 2048 || body.MaxTokens != nil {
		t.Errorf("model %q stream %v include_usage %v max_completion_tokens %d max_tokens %v", body.Model, body.Stream, body.StreamOptions.IncludeUsage, body.MaxCompletionTokens, body.MaxTokens)
	}
	if len(body.Tools) != 1 || body.Tools[0].Type != "function" || body.Tools[0].Function.Name != "read_file" || !providertest.JSONEqual(body.Tools[0].Function.Parameters, schema) {
		t.Errorf("tools = %+v", body.Tools)
	}
	var roles []string
	for _, m := range body.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,tool,user" {
		t.Fatalf("roles = %v, want system,user,assistant,tool,tool,user", roles)
	}
	if string(body.Messages[0].Content) != `"You are bridle.\n\nUse tabs."` {
		t.Errorf("system = %s", body.Messages[0].Content)
	}
	asst := body.Messages[2]
	if string(asst.Content) != `"Reading."` || len(asst.ToolCalls) != 2 || asst.ToolCalls[1].ID != "call_2" || asst.ToolCalls[1].Function.Arguments != `{"path":"b"}` || asst.ToolCalls[0].Type != "function" {
		t.Errorf("assistant message = %+v", asst)
	}
	if body.Messages[3].ToolCallID != "call_1" || string(body.Messages[3].Content) != `"contents of a"` {
		t.Errorf("first tool message = %+v", body.Messages[3])
	}
	if body.Messages[4].ToolCallID != "call_2" || !strings.Contains(string(body.Messages[4].Content), "Error: no such file") {
		t.Errorf("failed tool result should say so: %+v", body.Messages[4])
	}
	if strings.Contains(string(got.Body), "hmm") {
		t.Error("thinking was sent back to Chat Completions")
	}
}

// TestLocalServerRequest checks that a local server gets no key (even if
// OPENAI_API_KEY is set in the environment the SDK reads) and the older
// max_tokens field.
func TestLocalServerRequest(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	t.Setenv("OPENAI_ORG_ID", "org-must-not-leak")
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse")})
	c := New(Config{Name: "ollama", BaseURL: srv.URL + "/v1", LegacyMaxTokens: true})
	got := providertest.Send(t, srv, c, providertest.Hello("gpt-4.1"))
	if h := got.Header.Get("Authorization"); h != "" {
		t.Errorf("a key was sent to the local server: %q", h)
	}
	if h := got.Header.Get("OpenAI-Organization"); h != "" {
		t.Errorf("an organisation was sent to the local server: %q", h)
	}
	var body map[string]json.RawMessage
	json.Unmarshal(got.Body, &body)
	if string(body["max_tokens"]) != "1024" || body["max_completion_tokens"] != nil {
		t.Errorf("max_tokens = %s, max_completion_tokens = %s", body["max_tokens"], body["max_completion_tokens"])
	}
}

func TestHTTPErrors(t *testing.T) {
	load := func(status int, file string, header map[string]string) providertest.Reply {
		return providertest.Reply{Status: status, Header: header, Body: providertest.Load(t, testdata+file)}
	}
	target().HTTPErrors(t, []providertest.HTTPFailure{
		{Name: "bad key", Provider: "openai", Reply: load(401, "error_401.json", nil), Kind: provider.ErrAuth, Says: "OPENAI_API_KEY"},
		{Name: "unknown model", Provider: "openai", Reply: load(404, "error_404_model.json", nil), Kind: provider.ErrModel, Says: "gpt-9"},
		{Name: "context", Provider: "openai", Reply: load(400, "error_400_context.json", nil), Kind: provider.ErrContextLength, Says: "maximum context length"},
		{Name: "rate limited", Provider: "openai", Reply: load(429, "error_429.json", map[string]string{"retry-after": "4"}), Kind: provider.ErrRateLimited, Retryable: true, RetryAfter: 4 * time.Second, Says: "Rate limit reached"},
		{Name: "no quota", Provider: "openai", Reply: load(429, "error_429_quota.json", nil), Kind: provider.ErrRateLimited, Says: "quota"},
		{Name: "server", Provider: "openai", Reply: load(500, "error_500.json", nil), Kind: provider.ErrServer, Retryable: true, Says: "server had an error"},
		{Name: "ollama model", Provider: "ollama", Reply: load(404, "ollama_error_404.json", nil), Kind: provider.ErrModel, Says: "ollama pull"},
		{Name: "wrong base URL", Provider: "vllm", Reply: providertest.Reply{Status: 404, Body: "404 page not found"}, Kind: provider.ErrBadRequest, Says: "/v1"},
	})
}

func TestStreamFailures(t *testing.T) {
	load := func(file string) string { return providertest.Load(t, testdata+file) }
	target().StreamFailures(t, []providertest.StreamFailure{
		{Name: "error before output", Reply: providertest.Reply{Body: load("error_before_output.sse")}, Kind: provider.ErrOverloaded, Retryable: true},
		{Name: "error mid-stream", Reply: providertest.Reply{Body: load("error_mid_stream.sse")}, Text: "Here is the first", Kind: provider.ErrServer, Partial: true},
		{Name: "stream ends early", Reply: providertest.Reply{Body: load("truncated.sse")}, Text: "The answer begins and then", Kind: provider.ErrNetwork, Partial: true},
		{Name: "connection cut", Reply: providertest.Reply{Body: load("text.sse"), CutAfter: 3}, Text: "Hello! How can I", Kind: provider.ErrNetwork, Partial: true},
		{Name: "cut before output", Reply: providertest.Reply{Body: load("text.sse"), CutAfter: 1}, Kind: provider.ErrNetwork, Retryable: true},
	})
}

// TestClosesStream checks that cancelling the context, or a consumer that
// stops iterating, ends the stream and closes the connection at once,
// mid-response.
func TestClosesStream(t *testing.T) {
	target().ClosesStream(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse"), HangAfter: 2}, "Hello")
}

func TestOllamaNotRunning(t *testing.T) {
	pe, addr := target().Unreachable(t, "ollama")
	if !strings.Contains(pe.Error(), "is the ollama server running at http://"+addr) {
		t.Errorf("message %q should ask whether ollama runs", pe.Error())
	}
}

// A user turn with an image is sent as content parts: the text, then the
// image as a data: URL.
func TestImageOnTheWire(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse")})
	req := providertest.ImageRequest("gpt-4o")
	sent := providertest.Send(t, srv, New(Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1"}), req)
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(sent.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORyBmYWtl"}}]`
	if got := body.Messages[0].Content; body.Messages[0].Role != "user" || string(got) != want {
		t.Fatalf("user content = %s, want %s", got, want)
	}
}
