package anthropic

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/providertest"
)

const testdata = "../../testdata/anthropic/"

func newClient(srv *providertest.Server) *Client {
	return New(Config{APIKey: "sk-ant-test", BaseURL: srv.URL})
}

// target is the client as the shared checks make it.
func target() providertest.Target {
	return providertest.Target{Name: "anthropic", Model: "claude-sonnet-4-5", New: func(baseURL, name string) provider.Provider {
		return New(Config{Name: name, APIKey: "sk-ant-test", BaseURL: baseURL})
	}}
}

func TestStreamDecodes(t *testing.T) {
	load := func(file string) providertest.Reply {
		return providertest.Reply{Body: providertest.Load(t, testdata+file)}
	}
	target().Decodes(t, []providertest.Decoded{
		{
			Name:  "text.sse",
			Reply: load("text.sse"),
			Text:  "Hello! How can I help you today?",
			Stop:  provider.StopEndTurn,
			Usage: provider.Usage{InputTokens: 25, OutputTokens: 15, CacheReadTokens: 3400, CacheWriteTokens: 1200},
		},
		{
			Name:  "tool_use.sse",
			Reply: load("tool_use.sse"),
			Text:  "I'll read both files at once.",
			Calls: []provider.ToolCall{
				{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "read_file", Input: json.RawMessage(`{"path": "README.md"}`)},
				{ID: "toolu_01Ak3MwZJ9bE8wVx1pQxh3Lr", Name: "read_file", Input: json.RawMessage(`{"path": "go.mod"}`)},
			},
			Stop:  provider.StopToolUse,
			Usage: provider.Usage{InputTokens: 472, OutputTokens: 89},
			// Arguments must arrive in pieces, as the API sends them.
			ArgPieces: 4,
		},
		{
			Name:      "thinking.sse",
			Reply:     load("thinking.sse"),
			Text:      "27 * 453 = 12,231",
			Thinking:  "The user asks for 27 * 453.\n27 * 453 = 12231.",
			Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds1lhUCT0NqUTlNZ4vXfIA3nsGAmxQ5VyhL6mAXzVNt+Ge9tmQsiMKn3uEXvtMeIMwDVWmmK3rWgOzKRAeMBVhQjwgRM39cn3ZnrxCAAd6hVgw0wbI9g==",
			Stop:      provider.StopEndTurn,
			Usage:     provider.Usage{InputTokens: 58, OutputTokens: 102},
		},
	})
}

// TestRequestOnTheWire checks what bridle sends: the endpoint, the
// headers, the tool schema untouched, message order, thinking passed back
// with its signature, tool results, and cache_control where contextwin
// asked for it.
func TestRequestOnTheWire(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse")})
	schema := `{"type":"object","properties":{"path":{"type":"string","description":"file to read"}},"required":["path"],"additionalProperties":false}`
	req := provider.Request{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		System: []provider.SystemBlock{
			{Text: "You are bridle."},
			{Text: "Project rules: use tabs.", Cache: true},
		},
		Tools: []provider.Tool{
			{Name: "read_file", Description: "Read a file", InputSchema: json.RawMessage(schema)},
			{Name: "list_dir", Description: "List a directory", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
		CacheTools: true,
		Messages: []provider.Message{
			{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: "Read the README"}}, Cache: true},
			{Role: provider.RoleAssistant, Parts: []provider.Part{
				{Kind: provider.PartThinking, Text: "I should read it.", Signature: "sig-1"},
				{Kind: provider.PartText, Text: "Reading."},
				{Kind: provider.PartToolUse, ToolCallID: "toolu_1", ToolName: "read_file", Input: json.RawMessage(`{"path":"README.md"}`)},
			}},
			{Role: provider.RoleUser, Parts: []provider.Part{
				{Kind: provider.PartToolResult, ToolCallID: "toolu_1", Text: "no such file", IsError: true},
			}, Cache: true},
		},
	}
	got := providertest.Send(t, srv, newClient(srv), req)
	if got.Method != "POST" || got.Path != "/v1/messages" {
		t.Errorf("sent %s %s, want POST /v1/messages", got.Method, got.Path)
	}
	// The official SDK sends the key as a bearer token and pins the API
	// version it was generated for.
	for h, want := range map[string]string{
		"Authorization": "Bearer sk-ant-test",
		"Content-Type":  "application/json",
	} {
		if v := got.Header.Get(h); v != want {
			t.Errorf("header %s = %q, want %q", h, v, want)
		}
	}
	if v := got.Header.Get("Anthropic-Version"); len(v) != len("2006-01-02") {
		t.Errorf("anthropic-version header = %q, want a dated API version", v)
	}
	if v := got.Header.Get("X-Stainless-Retry-Count"); v != "0" {
		t.Errorf("retry count header = %q: the SDK must not retry on its own", v)
	}

	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		System    []struct {
			Text         string          `json:"text"`
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"system"`
		Tools []struct {
			Name         string          `json:"name"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"input_schema"`
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"tools"`
		Messages []struct {
			Role    string `json:"role"`
			Content []map[string]json.RawMessage
		} `json:"messages"`
	}
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got.Body)
	}
	if body.Model != "claude-sonnet-4-5" || body.MaxTokens != 4096 || !body.Stream {
		t.Errorf("model %q max_tokens %d stream %v", body.Model, body.MaxTokens, body.Stream)
	}
	ephemeral := `{"type":"ephemeral"}`
	if len(body.System) != 2 || body.System[0].CacheControl != nil || string(body.System[1].CacheControl) != ephemeral {
		t.Errorf("system = %+v; want cache_control on the second block only", body.System)
	}
	if len(body.Tools) != 2 || body.Tools[0].CacheControl != nil || string(body.Tools[1].CacheControl) != ephemeral {
		t.Errorf("tools cache_control wrong: %s", got.Body)
	}
	if !providertest.JSONEqual(body.Tools[0].InputSchema, schema) {
		t.Errorf("tool schema changed on the way:\n got %s\nwant %s", body.Tools[0].InputSchema, schema)
	}
	if len(body.Messages) != 3 {
		t.Fatalf("%d messages sent, want 3", len(body.Messages))
	}
	roles := []string{body.Messages[0].Role, body.Messages[1].Role, body.Messages[2].Role}
	if strings.Join(roles, ",") != "user,assistant,user" {
		t.Errorf("roles = %v", roles)
	}
	asst := body.Messages[1].Content
	types := []string{}
	for _, b := range asst {
		var typ string
		json.Unmarshal(b["type"], &typ)
		types = append(types, typ)
	}
	if strings.Join(types, ",") != "thinking,text,tool_use" {
		t.Errorf("assistant blocks = %v, want thinking,text,tool_use", types)
	}
	if string(asst[0]["signature"]) != `"sig-1"` || string(asst[0]["thinking"]) != `"I should read it."` {
		t.Errorf("thinking block not passed back with its signature: %v", asst[0])
	}
	if !providertest.JSONEqual(asst[2]["input"], `{"path":"README.md"}`) || string(asst[2]["id"]) != `"toolu_1"` {
		t.Errorf("tool_use block = %v", asst[2])
	}
	res := body.Messages[2].Content[0]
	if string(res["type"]) != `"tool_result"` || string(res["tool_use_id"]) != `"toolu_1"` || string(res["is_error"]) != "true" {
		t.Errorf("tool_result block = %v", res)
	}
	if string(res["cache_control"]) != ephemeral {
		t.Errorf("last message is marked for caching but its block has no cache_control: %v", res)
	}
	if string(body.Messages[0].Content[0]["cache_control"]) != ephemeral {
		t.Errorf("first user message is marked for caching but has no cache_control")
	}
	if n := strings.Count(string(got.Body), `"cache_control"`); n != 4 {
		t.Errorf("%d cache_control marks sent, want 4", n)
	}
}

// TestBreakpointLimit checks that a request asking for more cache marks
// than the API allows keeps the first (most stable) and the last three.
func TestBreakpointLimit(t *testing.T) {
	req := provider.Request{
		Model:      "claude-sonnet-4-5",
		Tools:      []provider.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		CacheTools: true,
		System:     []provider.SystemBlock{{Text: "s1", Cache: true}, {Text: "s2", Cache: true}},
	}
	for i := range 5 {
		req.Messages = append(req.Messages, provider.Message{
			Role:  []provider.Role{provider.RoleUser, provider.RoleAssistant}[i%2],
			Parts: []provider.Part{{Kind: provider.PartText, Text: "m" + string(rune('0'+i))}},
			Cache: true,
		})
	}
	raw, err := New(Config{}).body(req)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), `"cache_control"`); n != maxBreakpoints {
		t.Fatalf("%d cache_control marks, want %d:\n%s", n, maxBreakpoints, raw)
	}
	var body struct {
		Tools    []map[string]json.RawMessage `json:"tools"`
		System   []map[string]json.RawMessage `json:"system"`
		Messages []struct {
			Content []map[string]json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(raw, &body)
	if body.Tools[0]["cache_control"] == nil {
		t.Error("the tools breakpoint (the first, most stable) was dropped")
	}
	if body.System[0]["cache_control"] != nil || body.System[1]["cache_control"] != nil {
		t.Error("a middle breakpoint survived")
	}
	for i, m := range body.Messages {
		has := m.Content[0]["cache_control"] != nil
		if want := i >= 2; has != want {
			t.Errorf("message %d cache_control = %v, want %v", i, has, want)
		}
	}
}

func TestHTTPErrors(t *testing.T) {
	load := func(status int, file string, header map[string]string) providertest.Reply {
		return providertest.Reply{Status: status, Header: header, Body: providertest.Load(t, testdata+file)}
	}
	target().HTTPErrors(t, []providertest.HTTPFailure{
		{Name: "rate limited", Reply: load(429, "error_429.json", map[string]string{"retry-after": "7"}), Kind: provider.ErrRateLimited, Retryable: true, RetryAfter: 7 * time.Second, Says: "rate limit"},
		{Name: "spend limit", Reply: load(429, "error_429_spend_limit.json", nil), Kind: provider.ErrRateLimited, Says: "spend limit"},
		{Name: "overloaded", Reply: load(529, "error_529.json", nil), Kind: provider.ErrOverloaded, Retryable: true, Says: "overloaded"},
		{Name: "bad key", Reply: load(401, "error_401.json", nil), Kind: provider.ErrAuth, Says: "ANTHROPIC_API_KEY"},
		{Name: "unknown model", Reply: load(404, "error_404_model.json", nil), Kind: provider.ErrModel, Says: "claude-sonnet-9"},
		{Name: "too long", Reply: load(400, "error_400_too_long.json", nil), Kind: provider.ErrContextLength, Says: "prompt is too long"},
		{Name: "server", Reply: load(500, "error_500.json", map[string]string{"retry-after-ms": "250"}), Kind: provider.ErrServer, Retryable: true, RetryAfter: 250 * time.Millisecond, Says: "Internal server error"},
		{Name: "proxy page", Reply: providertest.Reply{Status: 502, Body: "<html>Bad Gateway</html>"}, Kind: provider.ErrServer, Retryable: true, Says: "502"},
	})
}

func TestStreamFailures(t *testing.T) {
	load := func(file string) string { return providertest.Load(t, testdata+file) }
	target().StreamFailures(t, []providertest.StreamFailure{
		{Name: "overloaded before output", Reply: providertest.Reply{Body: load("overloaded_before_output.sse")}, Kind: provider.ErrOverloaded, Retryable: true},
		{Name: "overloaded mid-stream", Reply: providertest.Reply{Body: load("overloaded_mid_stream.sse")}, Text: "Here is the first half", Kind: provider.ErrOverloaded, Partial: true},
		{Name: "stream ends early", Reply: providertest.Reply{Body: load("truncated.sse")}, Text: "The answer begins and then", Kind: provider.ErrNetwork, Partial: true},
		{Name: "connection cut", Reply: providertest.Reply{Body: load("text.sse"), CutAfter: 5}, Text: "Hello! How can I help", Kind: provider.ErrNetwork, Partial: true},
		{Name: "cut before output", Reply: providertest.Reply{Body: load("text.sse"), CutAfter: 1}, Kind: provider.ErrNetwork, Retryable: true},
	})
}

// TestClosesStream checks that cancelling the context, or a consumer that
// stops iterating, ends the stream and closes the connection at once,
// mid-response.
func TestClosesStream(t *testing.T) {
	target().ClosesStream(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse"), HangAfter: 4}, "Hello")
}

func TestConnectionRefused(t *testing.T) {
	target().Unreachable(t, "")
}

func TestAuthTokenForGateways(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse")})
	c := New(Config{AuthToken: "gw-token", BaseURL: srv.URL, Headers: map[string]string{"X-Gateway": "yes"}})
	h := providertest.Send(t, srv, c, providertest.Hello("claude-sonnet-4-5")).Header
	if h.Get("Authorization") != "Bearer gw-token" || h.Get("X-Gateway") != "yes" {
		t.Errorf("headers = %v", h)
	}
}

// An image part is sent as an image block with its bytes in base64, in
// the user's message beside the text.
func TestImageOnTheWire(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse")})
	req := providertest.ImageRequest("claude-sonnet-4-5")
	sent := providertest.Send(t, srv, newClient(srv), req)
	var body struct {
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(sent.Body, &body); err != nil {
		t.Fatal(err)
	}
	img := body.Messages[0].Content[1]
	src, _ := img["source"].(map[string]any)
	if img["type"] != "image" || src["type"] != "base64" || src["media_type"] != "image/png" || src["data"] != "iVBORyBmYWtl" {
		t.Fatalf("image block = %v", img)
	}
	// An image the session did not load is an error, not an empty block.
	req.Messages[0].Parts[1].Data = nil
	if _, _, err := providertest.Collect(t, newClient(srv), req); err == nil || !strings.Contains(err.Error(), "image:sha256:ab was not loaded") {
		t.Fatalf("an unloaded image: %v", err)
	}
}
