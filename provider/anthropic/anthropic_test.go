package anthropic

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

const testdata = "../../testdata/anthropic/"

func newClient(srv *providertest.Server) *Client {
	return New(Config{APIKey: "sk-ant-test", BaseURL: srv.URL})
}

func TestStreamDecodes(t *testing.T) {
	tests := []struct {
		file      string
		text      string
		thinking  string
		signature string
		calls     []provider.ToolCall
		stop      provider.StopReason
		usage     provider.Usage
	}{
		{
			file:  "text.sse",
			text:  "Hello! How can I help you today?",
			stop:  provider.StopEndTurn,
			usage: provider.Usage{InputTokens: 25, OutputTokens: 15, CacheReadTokens: 3400, CacheWriteTokens: 1200},
		},
		{
			file: "tool_use.sse",
			text: "I'll read both files at once.",
			calls: []provider.ToolCall{
				{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "read_file", Input: json.RawMessage(`{"path": "README.md"}`)},
				{ID: "toolu_01Ak3MwZJ9bE8wVx1pQxh3Lr", Name: "read_file", Input: json.RawMessage(`{"path": "go.mod"}`)},
			},
			stop:  provider.StopToolUse,
			usage: provider.Usage{InputTokens: 472, OutputTokens: 89},
		},
		{
			file:      "thinking.sse",
			text:      "27 * 453 = 12,231",
			thinking:  "The user asks for 27 * 453.\n27 * 453 = 12231.",
			signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds1lhUCT0NqUTlNZ4vXfIA3nsGAmxQ5VyhL6mAXzVNt+Ge9tmQsiMKn3uEXvtMeIMwDVWmmK3rWgOzKRAeMBVhQjwgRM39cn3ZnrxCAAd6hVgw0wbI9g==",
			stop:      provider.StopEndTurn,
			usage:     provider.Usage{InputTokens: 58, OutputTokens: 102},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+tt.file)})
			resp, deltas, err := providertest.Collect(t, newClient(srv), providertest.Hello("claude-sonnet-4-5"))
			if err != nil {
				t.Fatalf("stream failed: %v", err)
			}
			if resp.Text != tt.text {
				t.Errorf("text = %q, want %q", resp.Text, tt.text)
			}
			if resp.Thinking != tt.thinking || resp.Signature != tt.signature {
				t.Errorf("thinking = %q (signature %q), want %q (%q)", resp.Thinking, resp.Signature, tt.thinking, tt.signature)
			}
			if resp.StopReason != tt.stop {
				t.Errorf("stop = %q, want %q", resp.StopReason, tt.stop)
			}
			if resp.Usage != tt.usage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tt.usage)
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
			// Arguments must arrive in pieces, as the API sends them, and
			// every started call must be ended.
			starts, ends, args := 0, 0, 0
			for _, d := range deltas {
				switch d.Kind {
				case provider.DeltaToolStart:
					starts++
				case provider.DeltaToolEnd:
					ends++
				case provider.DeltaToolArgs:
					args++
				}
			}
			if starts != len(tt.calls) || ends != len(tt.calls) || (len(tt.calls) > 0 && args < 2*len(tt.calls)) {
				t.Errorf("tool deltas: %d starts, %d ends, %d argument pieces for %d calls", starts, ends, args, len(tt.calls))
			}
			if last := deltas[len(deltas)-1]; last.Kind != provider.DeltaStop {
				t.Errorf("last delta is %v, want the stop", last.Kind)
			}
		})
	}
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
	if _, _, err := providertest.Collect(t, newClient(srv), req); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	got := reqs[0]
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
	if !jsonEqual(body.Tools[0].InputSchema, schema) {
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
	if !jsonEqual(asst[2]["input"], `{"path":"README.md"}`) || string(asst[2]["id"]) != `"toolu_1"` {
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
	tests := []struct {
		name       string
		status     int
		file       string
		header     map[string]string
		kind       provider.ErrorKind
		retryable  bool
		retryAfter time.Duration
		says       string
	}{
		{"rate limited", 429, "error_429.json", map[string]string{"retry-after": "7"}, provider.ErrRateLimited, true, 7 * time.Second, "rate limit"},
		{"spend limit", 429, "error_429_spend_limit.json", nil, provider.ErrRateLimited, false, 0, "spend limit"},
		{"overloaded", 529, "error_529.json", nil, provider.ErrOverloaded, true, 0, "overloaded"},
		{"bad key", 401, "error_401.json", nil, provider.ErrAuth, false, 0, "ANTHROPIC_API_KEY"},
		{"unknown model", 404, "error_404_model.json", nil, provider.ErrModel, false, 0, "claude-sonnet-9"},
		{"too long", 400, "error_400_too_long.json", nil, provider.ErrContextLength, false, 0, "prompt is too long"},
		{"server", 500, "error_500.json", map[string]string{"retry-after-ms": "250"}, provider.ErrServer, true, 250 * time.Millisecond, "Internal server error"},
		{"proxy page", 502, "", nil, provider.ErrServer, true, 0, "502"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := "<html>Bad Gateway</html>"
			if tt.file != "" {
				body = providertest.Load(t, testdata+tt.file)
			}
			srv := providertest.NewServer(t, providertest.Reply{Status: tt.status, Header: tt.header, Body: body})
			_, deltas, err := providertest.Collect(t, newClient(srv), providertest.Hello("claude-sonnet-4-5"))
			if len(deltas) != 0 {
				t.Errorf("got %d deltas before the error", len(deltas))
			}
			pe, ok := provider.AsError(err)
			if !ok {
				t.Fatalf("error %v (%T) is not a provider.Error", err, err)
			}
			if pe.Kind != tt.kind || pe.Retryable != tt.retryable || pe.Status != tt.status || pe.Partial {
				t.Errorf("got kind %s retryable %v status %d partial %v; want %s %v %d false", pe.Kind, pe.Retryable, pe.Status, pe.Partial, tt.kind, tt.retryable, tt.status)
			}
			if pe.RetryAfter != tt.retryAfter {
				t.Errorf("retry after %v, want %v", pe.RetryAfter, tt.retryAfter)
			}
			msg := pe.Error()
			if !strings.HasPrefix(msg, "anthropic (HTTP ") || !strings.Contains(msg, tt.says) {
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
		{"overloaded before output", providertest.Reply{Body: providertest.Load(t, testdata+"overloaded_before_output.sse")}, "", provider.ErrOverloaded, false, true},
		{"overloaded mid-stream", providertest.Reply{Body: providertest.Load(t, testdata+"overloaded_mid_stream.sse")}, "Here is the first half", provider.ErrOverloaded, true, false},
		{"stream ends early", providertest.Reply{Body: providertest.Load(t, testdata+"truncated.sse")}, "The answer begins and then", provider.ErrNetwork, true, false},
		{"connection cut", providertest.Reply{Body: providertest.Load(t, testdata+"text.sse"), CutAfter: 5}, "Hello! How can I help", provider.ErrNetwork, true, false},
		{"cut before output", providertest.Reply{Body: providertest.Load(t, testdata+"text.sse"), CutAfter: 1}, "", provider.ErrNetwork, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, tt.reply)
			resp, _, err := providertest.Collect(t, newClient(srv), providertest.Hello("claude-sonnet-4-5"))
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

// TestCancelClosesStream checks that cancelling the context ends the
// stream and closes the connection at once, mid-response.
func TestCancelClosesStream(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse"), HangAfter: 4})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var c provider.Collector
	var err error
	for d, e := range newClient(srv).Stream(ctx, providertest.Hello("claude-sonnet-4-5")) {
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
		t.Errorf("partial text = %q, want %q", got, "Hello")
	}
	select {
	case <-srv.ClientGone():
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

// TestStopEarlyClosesStream checks that a consumer that stops iterating
// closes the connection too.
func TestStopEarlyClosesStream(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse"), HangAfter: 4})
	for d, err := range newClient(srv).Stream(context.Background(), providertest.Hello("claude-sonnet-4-5")) {
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind == provider.DeltaText {
			break
		}
	}
	select {
	case <-srv.ClientGone():
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := New(Config{APIKey: "k", BaseURL: "http://" + addr})
	_, _, err = providertest.Collect(t, c, providertest.Hello("claude-sonnet-4-5"))
	pe, ok := provider.AsError(err)
	if !ok || pe.Kind != provider.ErrNetwork || !pe.Retryable || pe.Partial {
		t.Fatalf("error = %#v, want a retryable network error", err)
	}
	if !strings.Contains(pe.Error(), addr) {
		t.Errorf("message %q does not name the address", pe.Error())
	}
}

func TestAuthTokenForGateways(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse")})
	c := New(Config{AuthToken: "gw-token", BaseURL: srv.URL, Headers: map[string]string{"X-Gateway": "yes"}})
	if _, _, err := providertest.Collect(t, c, providertest.Hello("claude-sonnet-4-5")); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "Bearer gw-token" || h.Get("X-Gateway") != "yes" {
		t.Errorf("headers = %v", h)
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

// An image part is sent as an image block with its bytes in base64, in
// the user's message beside the text.
func TestImageOnTheWire(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Load(t, testdata+"text.sse")})
	req := provider.Request{Model: "claude-sonnet-4-5", MaxTokens: 1024, Messages: []provider.Message{
		{Role: provider.RoleUser, Parts: []provider.Part{
			{Kind: provider.PartText, Text: "what is this?"},
			{Kind: provider.PartImage, MimeType: "image/png", Data: []byte("\x89PNG fake"), Ref: "image:sha256:ab"},
		}},
	}}
	if _, _, err := providertest.Collect(t, newClient(srv), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
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
