package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/provider"
)

// The request body, in Chat Completions' shapes, encoded with
// encoding/json rather than through the SDK's parameter types (which cost
// about a millisecond per 100 KB of history on every iteration).
type (
	wireRequest struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
		// Usage arrives in one extra chunk before [DONE]; without it a
		// streamed answer reports no tokens at all.
		StreamOptions       streamOptions `json:"stream_options"`
		Messages            []wireMessage `json:"messages"`
		Tools               []wireTool    `json:"tools,omitempty"`
		MaxCompletionTokens int           `json:"max_completion_tokens,omitempty"`
		MaxTokens           int           `json:"max_tokens,omitempty"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	wireTool struct {
		Type     string       `json:"type"` // function
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	wireMessage struct {
		Role string `json:"role"`
		// Content is a *string, so that an assistant turn of tool calls
		// alone sends no content rather than an empty one, or the
		// []wirePart of a user turn with images; nil sends none.
		Content    any            `json:"content,omitempty"`
		ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	wirePart struct {
		Type     string        `json:"type"` // text, image_url
		Text     string        `json:"text,omitempty"`
		ImageURL *wireImageURL `json:"image_url,omitempty"`
	}
	wireImageURL struct {
		URL string `json:"url"` // a data: URL
	}
	wireToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"` // function
		Function wireCallFunc `json:"function"`
	}
	wireCallFunc struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
)

// body encodes a provider-neutral request for Chat Completions.
func (c *Client) body(req provider.Request) ([]byte, error) {
	w := wireRequest{Model: req.Model, Stream: true, StreamOptions: streamOptions{IncludeUsage: true}}
	if req.MaxTokens > 0 {
		if c.legacyMaxTokens {
			w.MaxTokens = req.MaxTokens
		} else {
			w.MaxCompletionTokens = req.MaxTokens
		}
	}
	// One system message: several are accepted by OpenAI but not by every
	// local server's chat template. OpenAI caches prompt prefixes by
	// itself, so the cache marks have nothing to map to here.
	var system []string
	for _, b := range req.System {
		if b.Text != "" {
			system = append(system, b.Text)
		}
	}
	if len(system) > 0 {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: ptr(strings.Join(system, "\n\n"))})
	}
	for _, t := range req.Tools {
		params := t.InputSchema
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(params) {
			return nil, fmt.Errorf("tool %q has an input schema that is not valid JSON", t.Name)
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	for i, m := range req.Messages {
		msgs, err := messages(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		w.Messages = append(w.Messages, msgs...)
	}
	return c.enc.Encode(w)
}

func ptr(s string) *string { return &s }

// messages maps one neutral message to Chat Completions messages. Tool
// results travel in user messages in bridle (as in the Anthropic API);
// here each becomes its own tool-role message, placed before any text of
// the same turn so that it directly follows the assistant's tool calls.
func messages(m provider.Message) ([]wireMessage, error) {
	switch m.Role {
	case provider.RoleUser:
		var out []wireMessage
		var text []string
		var images []wirePart
		for _, part := range m.Parts {
			switch part.Kind {
			case provider.PartImage:
				if part.Data == nil {
					return nil, fmt.Errorf("image %s was not loaded", part.Ref)
				}
				images = append(images, wirePart{Type: "image_url", ImageURL: &wireImageURL{
					URL: "data:" + part.MimeType + ";base64," + base64.StdEncoding.EncodeToString(part.Data)}})
			case provider.PartToolResult:
				content := part.Text
				if part.IsError && !strings.HasPrefix(content, "Error") {
					// The tool role has no error flag; say it in words.
					content = "Error: " + content
				}
				if content == "" {
					content = "(no output)"
				}
				out = append(out, wireMessage{Role: "tool", Content: &content, ToolCallID: part.ToolCallID})
			case provider.PartText:
				text = append(text, part.Text)
			case provider.PartThinking, provider.PartToolUse:
				// Not meaningful in a user turn.
			default:
				return nil, fmt.Errorf("unknown part kind %q", part.Kind)
			}
		}
		switch {
		case len(images) > 0:
			parts := []wirePart{{Type: "text", Text: strings.Join(text, "\n")}}
			out = append(out, wireMessage{Role: "user", Content: append(parts, images...)})
		case len(text) > 0:
			out = append(out, wireMessage{Role: "user", Content: ptr(strings.Join(text, "\n"))})
		}
		return out, nil
	case provider.RoleAssistant:
		a := wireMessage{Role: "assistant"}
		var text []string
		for _, part := range m.Parts {
			switch part.Kind {
			case provider.PartText:
				text = append(text, part.Text)
			case provider.PartToolUse:
				args := string(part.Input)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, wireToolCall{ID: part.ToolCallID, Type: "function", Function: wireCallFunc{Name: part.ToolName, Arguments: args}})
			case provider.PartThinking:
				// Chat Completions takes no reasoning back; it is dropped.
			case provider.PartToolResult:
			default:
				return nil, fmt.Errorf("unknown part kind %q", part.Kind)
			}
		}
		if s := strings.Join(text, ""); s != "" || len(a.ToolCalls) == 0 {
			a.Content = &s
		}
		return []wireMessage{a}, nil
	}
	return nil, fmt.Errorf("role %q; want user or assistant", m.Role)
}
