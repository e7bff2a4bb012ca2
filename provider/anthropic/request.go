package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/bridle-dev/bridle/provider"
)

// maxBreakpoints is how many cache_control marks one request may carry.
const maxBreakpoints = 4

// defaultMaxTokens is used when a request does not say; the API requires
// max_tokens.
const defaultMaxTokens = 8192

// The request body, in the Messages API's shapes. bridle encodes it with
// encoding/json rather than through the SDK's parameter types: those
// re-encode every nested union into its own buffer, which costs about a
// millisecond per 100 KB of history, on every iteration of a tool loop.
type (
	wireRequest struct {
		Model     string        `json:"model"`
		MaxTokens int           `json:"max_tokens"`
		Stream    bool          `json:"stream"`
		System    []textBlock   `json:"system,omitempty"`
		Tools     []wireTool    `json:"tools,omitempty"`
		Messages  []wireMessage `json:"messages"`
	}
	cacheControl struct {
		Type string `json:"type"`
	}
	wireTool struct {
		Name         string          `json:"name"`
		Description  string          `json:"description,omitempty"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl *cacheControl   `json:"cache_control,omitempty"`
	}
	wireMessage struct {
		Role    string `json:"role"`
		Content []any  `json:"content"`
	}
	textBlock struct {
		Type         string        `json:"type"` // text
		Text         string        `json:"text"`
		CacheControl *cacheControl `json:"cache_control,omitempty"`
	}
	thinkingBlock struct {
		Type      string `json:"type"` // thinking
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	toolUseBlock struct {
		Type         string          `json:"type"` // tool_use
		ID           string          `json:"id"`
		Name         string          `json:"name"`
		Input        json.RawMessage `json:"input"`
		CacheControl *cacheControl   `json:"cache_control,omitempty"`
	}
	imageBlock struct {
		Type   string      `json:"type"` // image
		Source imageSource `json:"source"`
	}
	imageSource struct {
		Type      string `json:"type"` // base64
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}
	toolResultBlock struct {
		Type         string        `json:"type"` // tool_result
		ToolUseID    string        `json:"tool_use_id"`
		Content      []textBlock   `json:"content,omitempty"`
		IsError      bool          `json:"is_error,omitempty"`
		CacheControl *cacheControl `json:"cache_control,omitempty"`
	}
)

var ephemeral = &cacheControl{Type: "ephemeral"}

// body encodes a provider-neutral request for the Messages API.
func (c *Client) body(req provider.Request) ([]byte, error) {
	w, err := wire(req)
	if err != nil {
		return nil, err
	}
	return c.enc.Encode(w)
}

func wire(req provider.Request) (wireRequest, error) {
	w := wireRequest{Model: req.Model, MaxTokens: req.MaxTokens, Stream: true, Messages: make([]wireMessage, 0, len(req.Messages))}
	if w.MaxTokens <= 0 {
		w.MaxTokens = defaultMaxTokens
	}
	keep := breakpoints(req)
	mark := 0 // index of the next breakpoint, in request order
	cache := func(want bool) *cacheControl {
		if !want {
			return nil
		}
		i := mark
		mark++
		if !keep(i) {
			return nil
		}
		return ephemeral
	}
	// The API reads tools, then system, then messages; the breakpoints
	// are numbered in the same order.
	for i, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(schema) {
			return w, fmt.Errorf("tool %q has an input schema that is not valid JSON", t.Name)
		}
		w.Tools = append(w.Tools, wireTool{
			Name: t.Name, Description: t.Description, InputSchema: schema,
			CacheControl: cache(req.CacheTools && i == len(req.Tools)-1),
		})
	}
	for _, b := range req.System {
		w.System = append(w.System, textBlock{Type: "text", Text: b.Text, CacheControl: cache(b.Cache)})
	}
	for i, m := range req.Messages {
		if m.Role != provider.RoleUser && m.Role != provider.RoleAssistant {
			return w, fmt.Errorf("message %d has role %q; want user or assistant", i, m.Role)
		}
		blocks, err := content(m)
		if err != nil {
			return w, fmt.Errorf("message %d: %w", i, err)
		}
		if m.Cache {
			setCache(blocks, cache(true))
		}
		w.Messages = append(w.Messages, wireMessage{Role: string(m.Role), Content: blocks})
	}
	return w, nil
}

// breakpoints decides which of the request's cache marks survive when it
// asks for more than the API allows. The first mark (the end of the tools
// or system prompt, the most stable prefix) survives a compaction that
// rewrites the history; the last ones cover the longest prefix and make
// the next iteration of a tool loop a cache read. The middle ones go.
func breakpoints(req provider.Request) func(int) bool {
	n := 0
	if req.CacheTools && len(req.Tools) > 0 {
		n++
	}
	for _, b := range req.System {
		if b.Cache {
			n++
		}
	}
	for _, m := range req.Messages {
		if m.Cache {
			n++
		}
	}
	if n <= maxBreakpoints {
		return func(int) bool { return true }
	}
	return func(i int) bool { return i == 0 || i >= n-(maxBreakpoints-1) }
}

// setCache marks the last block that can carry cache_control (thinking
// blocks cannot).
func setCache(blocks []any, cc *cacheControl) {
	if cc == nil {
		return
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		switch b := blocks[i].(type) {
		case textBlock:
			b.CacheControl = cc
			blocks[i] = b
		case toolUseBlock:
			b.CacheControl = cc
			blocks[i] = b
		case toolResultBlock:
			b.CacheControl = cc
			blocks[i] = b
		default:
			continue
		}
		return
	}
}

func content(m provider.Message) ([]any, error) {
	blocks := make([]any, 0, len(m.Parts))
	for _, part := range m.Parts {
		switch part.Kind {
		case provider.PartText:
			if part.Text == "" {
				continue // the API rejects empty text blocks
			}
			blocks = append(blocks, textBlock{Type: "text", Text: part.Text})
		case provider.PartThinking:
			if m.Role != provider.RoleAssistant || part.Signature == "" {
				// Unsigned thinking (from another provider) cannot be sent
				// back; the API would reject the whole request.
				continue
			}
			blocks = append(blocks, thinkingBlock{Type: "thinking", Thinking: part.Text, Signature: part.Signature})
		case provider.PartToolUse:
			input := part.Input
			if len(input) == 0 || !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: part.ToolCallID, Name: part.ToolName, Input: input})
		case provider.PartImage:
			if part.Data == nil {
				return nil, fmt.Errorf("image %s was not loaded", part.Ref)
			}
			blocks = append(blocks, imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: part.MimeType,
				Data: base64.StdEncoding.EncodeToString(part.Data)}})
		case provider.PartToolResult:
			r := toolResultBlock{Type: "tool_result", ToolUseID: part.ToolCallID, IsError: part.IsError}
			if part.Text != "" {
				r.Content = []textBlock{{Type: "text", Text: part.Text}}
			}
			blocks = append(blocks, r)
		default:
			return nil, fmt.Errorf("unknown part kind %q", part.Kind)
		}
	}
	if len(blocks) == 0 {
		// An empty message is invalid; keep the turn structure with a
		// placeholder rather than fail the whole request.
		blocks = append(blocks, textBlock{Type: "text", Text: "(empty)"})
	}
	return blocks, nil
}
