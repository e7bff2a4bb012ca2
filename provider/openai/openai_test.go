package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/providertest"
)

const testdata = "../../testdata/openai/"

func TestStreamDecodes(t *testing.T) {
	tests := []struct {
		file     string
		name     string
		text     string
		thinking string
		calls    []provider.ToolCall
		stop     provider.StopReason
		usage    provider.Usage
	}{
		{
			file:  "text.sse",
			name:  "openai",
			text:  "Hello! How can I help?",
			stop:  provider.StopEndTurn,
			usage: provider.Usage{InputTokens: 93, OutputTokens: 9, CacheReadTokens: 1024},
		},
		{
			file: "tool_calls.sse",
			name: "openai",
			calls: []provider.ToolCall{
				{ID: "call_DdmO9pD3xa9XTPNJ32zg2hcA", Name: "read_file", Input: json.RawMessage(`{"path": "README.md"}`)},
				{ID: "call_0OSswGu4XvOUz9Rz0Rp3Qb1n", Name: "read_file", Input: json.RawMessage(`{"path": "go.mod"}`)},
			},
			stop:  provider.StopToolUse,
			usage: provider.Usage{InputTokens: 320, OutputTokens: 52},
		},
		{
			// Ollama sends each call whole, both at index 0, and its
			// reasoning under "reasoning".
			file:     "ollama_tool_call.sse",
			name:     "ollama",
			thinking: "The user wants the README; read it.",
			calls: []provider.ToolCall{
				{ID: "call_mz2fh6vb", Name: "read_file", Input: json.RawMessage(`{"path":"README.md"}`)},
				{ID: "call_q1w0wq8d", Name: "read_file", Input: json.RawMessage(`{"path":"go.mod"}`)},
			},
			stop:  provider.StopToolUse,
			usage: provider.Usage{InputTokens: 210, OutputTokens: 40},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+tt.file)})
			c := New(Config{Name: tt.name, APIKey: "sk-test", BaseURL: srv.URL + "/v1"})
			resp, deltas, err := providertest.Collect(t, c, providertest.Hello("gpt-4.1"))
			if err != nil {
				t.Fatalf("stream failed: %v", err)
			}
			if resp.Text != tt.text || resp.Thinking != tt.thinking {
				t.Errorf("text %q thinking %q, want %q %q", resp.Text, resp.Thinking, tt.text, tt.thinking)
			}
			if resp.StopReason != tt.stop || resp.Usage != tt.usage {
				t.Errorf("stop %q usage %+v, want %q %+v", resp.StopReason, resp.Usage, tt.stop, tt.usage)
			}
			if len(resp.ToolCalls) != len(tt.calls) {
				t.Fatalf("tool calls = %+v, want %+v", resp.ToolCalls, tt.calls)
			}
			for i, want := range tt.calls {
				got := resp.ToolCalls[i]
				if got.ID != want.ID || got.Name != want.Name || string(got.Input) != string(want.Input) {
					t.Errorf("tool call %d = %s %s %s, want %s %s %s", i, got.ID, got.Name, got.Input, want.ID, want.Name, want.Input)
				}
			}
			starts, ends := 0, 0
			for _, d := range deltas {
				switch d.Kind {
				case provider.DeltaToolStart:
					starts++
				case provider.DeltaToolEnd:
					ends++
				}
			}
			if starts != len(tt.calls) || ends != len(tt.calls) {
				t.Errorf("%d starts and %d ends for %d calls", starts, ends, len(tt.calls))
			}
			if last := deltas[len(deltas)-1]; last.Kind != provider.DeltaStop {
				t.Errorf("last delta is %v, want the stop", last.Kind)
			}
		})
	}
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
	if _, _, err := providertest.Collect(t, c, req); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
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
	if len(body.Tools) != 1 || body.Tools[0].Type != "function" || body.Tools[0].Function.Name != "read_file" || !jsonEqual(body.Tools[0].Function.Parameters, schema) {
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
	if _, _, err := providertest.Collect(t, c, providertest.Hello("gpt-4.1")); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
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
	tests := []struct {
		name       string
		provider   string
		status     int
		file       string
		header     map[string]string
		kind       provider.ErrorKind
		retryable  bool
		retryAfter time.Duration
		says       string
	}{
		{"bad key", "openai", 401, "error_401.json", nil, provider.ErrAuth, false, 0, "OPENAI_API_KEY"},
		{"unknown model", "openai", 404, "error_404_model.json", nil, provider.ErrModel, false, 0, "gpt-9"},
		{"context", "openai", 400, "error_400_context.json", nil, provider.ErrContextLength, false, 0, "maximum context length"},
		{"rate limited", "openai", 429, "error_429.json", map[string]string{"retry-after": "4"}, provider.ErrRateLimited, true, 4 * time.Second, "Rate limit reached"},
		{"no quota", "openai", 429, "error_429_quota.json", nil, provider.ErrRateLimited, false, 0, "quota"},
		{"server", "openai", 500, "error_500.json", nil, provider.ErrServer, true, 0, "server had an error"},
		{"ollama model", "ollama", 404, "ollama_error_404.json", nil, provider.ErrModel, false, 0, "ollama pull"},
		{"wrong base URL", "vllm", 404, "", nil, provider.ErrBadRequest, false, 0, "/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `404 page not found`
			if tt.file != "" {
				body = providertest.Load(t, testdata+tt.file)
			}
			srv := providertest.NewServer(t, providertest.Reply{Status: tt.status, Header: tt.header, Body: body})
			c := New(Config{Name: tt.provider, APIKey: "sk-test", BaseURL: srv.URL + "/v1"})
			_, _, err := providertest.Collect(t, c, providertest.Hello("gpt-4.1"))
			pe, ok := provider.AsError(err)
			if !ok {
				t.Fatalf("error %v (%T) is not a provider.Error", err, err)
			}
			if pe.Kind != tt.kind || pe.Retryable != tt.retryable || pe.Status != tt.status || pe.RetryAfter != tt.retryAfter {
				t.Errorf("got kind %s retryable %v status %d retry-after %v; want %s %v %d %v", pe.Kind, pe.Retryable, pe.Status, pe.RetryAfter, tt.kind, tt.retryable, tt.status, tt.retryAfter)
			}
			msg := pe.Error()
			if !strings.HasPrefix(msg, tt.provider+" (HTTP ") || !strings.Contains(msg, tt.says) {
				t.Errorf("message %q should name the provider, the status and %q", msg, tt.says)
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	tests := []struct {
		name      string
		reply     providertest.Reply
		text      string
		kind      provider.ErrorKind
		partial   bool
		retryable bool
	}{
		{"error before output", providertest.Reply{Body: providertest.Load(t, testdata+"error_before_output.sse")}, "", provider.ErrOverloaded, false, true},
		{"error mid-stream", providertest.Reply{Body: providertest.Load(t, testdata+"error_mid_stream.sse")}, "Here is the first", provider.ErrServer, true, false},
		{"stream ends early", providertest.Reply{Body: providertest.Load(t, testdata+"truncated.sse")}, "The answer begins and then", provider.ErrNetwork, true, false},
		{"connection cut", providertest.Reply{Body: providertest.Load(t, testdata+"text.sse"), CutAfter: 3}, "Hello! How can I", provider.ErrNetwork, true, false},
		{"cut before output", providertest.Reply{Body: providertest.Load(t, testdata+"text.sse"), CutAfter: 1}, "", provider.ErrNetwork, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, tt.reply)
			resp, _, err := providertest.Collect(t, New(Config{APIKey: "k", BaseURL: srv.URL + "/v1"}), providertest.Hello("gpt-4.1"))
			pe, ok := provider.AsError(err)
			if !ok {
				t.Fatalf("error %v (%T) is not a provider.Error", err, err)
			}
			if pe.Kind != tt.kind || pe.Partial != tt.partial || pe.Retryable != tt.retryable {
				t.Errorf("got kind %s partial %v retryable %v; want %s %v %v (%v)", pe.Kind, pe.Partial, pe.Retryable, tt.kind, tt.partial, tt.retryable, pe)
			}
			if resp.Text != tt.text {
				t.Errorf("partial text = %q, want %q", resp.Text, tt.text)
			}
		})
	}
}

func TestCancelClosesStream(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse"), HangAfter: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var c provider.Collector
	var err error
	for d, e := range New(Config{BaseURL: srv.URL + "/v1"}).Stream(ctx, providertest.Hello("gpt-4.1")) {
		if e != nil {
			err = e
			break
		}
		c.Add(d)
		if d.Kind == provider.DeltaText {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if got := c.Response().Text; got != "Hello" {
		t.Errorf("partial text = %q", got)
	}
	select {
	case <-srv.ClientGone():
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

func TestOllamaNotRunning(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := New(Config{Name: "ollama", BaseURL: "http://" + addr + "/v1"})
	_, _, err = providertest.Collect(t, c, providertest.Hello("gpt-4.1"))
	pe, ok := provider.AsError(err)
	if !ok || pe.Kind != provider.ErrNetwork || !pe.Retryable {
		t.Fatalf("error = %v, want a retryable network error", err)
	}
	if !strings.Contains(pe.Error(), "is the ollama server running at http://"+addr) {
		t.Errorf("message %q should ask whether ollama runs", pe.Error())
	}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// A user turn with an image is sent as content parts: the text, then the
// image as a data: URL.
func TestImageOnTheWire(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse")})
	req := provider.Request{Model: "gpt-4o", MaxTokens: 1024, Messages: []provider.Message{
		{Role: provider.RoleUser, Parts: []provider.Part{
			{Kind: provider.PartText, Text: "what is this?"},
			{Kind: provider.PartImage, MimeType: "image/png", Data: []byte("\x89PNG fake"), Ref: "image:sha256:ab"},
		}},
	}}
	if _, _, err := providertest.Collect(t, New(Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1"}), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORyBmYWtl"}}]`
	if got := body.Messages[0].Content; body.Messages[0].Role != "user" || string(got) != want {
		t.Fatalf("user content = %s, want %s", got, want)
	}
}
