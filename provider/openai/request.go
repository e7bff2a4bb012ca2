package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/bridle-dev/bridle/provider"
)

// params maps a provider-neutral request to Chat Completions.
func (c *Client) params(req provider.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{
		Model: shared.ChatModel(req.Model),
		// Usage arrives in one extra chunk before [DONE]; without it a
		// streamed answer reports no tokens at all.
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	if req.MaxTokens > 0 {
		if c.legacyMaxTokens {
			p.MaxTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			p.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
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
		p.Messages = append(p.Messages, sdk.SystemMessage(strings.Join(system, "\n\n")))
	}
	for _, t := range req.Tools {
		def := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		if len(t.InputSchema) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
				return p, fmt.Errorf("tool %q has an input schema that is not a JSON object: %w", t.Name, err)
			}
			def.Parameters = schema
		} else {
			def.Parameters = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(def))
	}
	for i, m := range req.Messages {
		msgs, err := messages(m)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, msgs...)
	}
	return p, nil
}

// messages maps one neutral message to Chat Completions messages. Tool
// results travel in user messages in bridle (as in the Anthropic API);
// here each becomes its own tool-role message, placed before any text of
// the same turn so that it directly follows the assistant's tool calls.
func messages(m provider.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case provider.RoleUser:
		var out []sdk.ChatCompletionMessageParamUnion
		var text []string
		for _, part := range m.Parts {
			switch part.Kind {
			case provider.PartToolResult:
				content := part.Text
				if part.IsError && !strings.HasPrefix(content, "Error") {
					// The tool role has no error flag; say it in words.
					content = "Error: " + content
				}
				if content == "" {
					content = "(no output)"
				}
				out = append(out, sdk.ToolMessage(content, part.ToolCallID))
			case provider.PartText:
				text = append(text, part.Text)
			case provider.PartThinking, provider.PartToolUse:
				// Not meaningful in a user turn.
			default:
				return nil, fmt.Errorf("unknown part kind %q", part.Kind)
			}
		}
		if len(text) > 0 {
			out = append(out, sdk.UserMessage(strings.Join(text, "\n")))
		}
		return out, nil
	case provider.RoleAssistant:
		a := sdk.ChatCompletionAssistantMessageParam{}
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
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       part.ToolCallID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: part.ToolName, Arguments: args},
					},
				})
			case provider.PartThinking:
				// Chat Completions takes no reasoning back; it is dropped.
			case provider.PartToolResult:
			default:
				return nil, fmt.Errorf("unknown part kind %q", part.Kind)
			}
		}
		if s := strings.Join(text, ""); s != "" || len(a.ToolCalls) == 0 {
			a.Content.OfString = sdk.String(s)
		}
		return []sdk.ChatCompletionMessageParamUnion{{OfAssistant: &a}}, nil
	}
	return nil, fmt.Errorf("role %q; want user or assistant", m.Role)
}
