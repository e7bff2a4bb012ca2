package anthropic

import (
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/bridle-dev/bridle/provider"
)

// maxBreakpoints is how many cache_control marks one request may carry.
const maxBreakpoints = 4

// defaultMaxTokens is used when a request does not say; the API requires
// max_tokens.
const defaultMaxTokens = 8192

// params maps a provider-neutral request to the Messages API.
func params(req provider.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:     req.Model,
		MaxTokens: int64(req.MaxTokens),
	}
	if p.MaxTokens <= 0 {
		p.MaxTokens = defaultMaxTokens
	}
	keep := breakpoints(req)
	mark := 0 // index of the next breakpoint, in request order
	cache := func(want bool) sdk.CacheControlEphemeralParam {
		if !want {
			return sdk.CacheControlEphemeralParam{}
		}
		i := mark
		mark++
		if !keep(i) {
			return sdk.CacheControlEphemeralParam{}
		}
		return sdk.NewCacheControlEphemeralParam()
	}

	// Order matters for the numbering above: the API reads tools, then
	// system, then messages, and so does the breakpoint count.
	for i, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(schema) {
			return p, fmt.Errorf("tool %q has an input schema that is not valid JSON", t.Name)
		}
		tool := sdk.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[sdk.ToolInputSchemaParam](schema),
		}
		if t.Description != "" {
			tool.Description = sdk.String(t.Description)
		}
		tool.CacheControl = cache(req.CacheTools && i == len(req.Tools)-1)
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}
	for _, b := range req.System {
		p.System = append(p.System, sdk.TextBlockParam{Text: b.Text, CacheControl: cache(b.Cache)})
	}
	for i, m := range req.Messages {
		blocks, err := content(m)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		if m.Cache {
			setCache(blocks, cache(true))
		}
		switch m.Role {
		case provider.RoleUser:
			p.Messages = append(p.Messages, sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}})
		case provider.RoleAssistant:
			p.Messages = append(p.Messages, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}})
		default:
			return p, fmt.Errorf("message %d has role %q; want user or assistant", i, m.Role)
		}
	}
	return p, nil
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
func setCache(blocks []sdk.ContentBlockParamUnion, cc sdk.CacheControlEphemeralParam) {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		switch {
		case b.OfText != nil:
			b.OfText.CacheControl = cc
		case b.OfToolUse != nil:
			b.OfToolUse.CacheControl = cc
		case b.OfToolResult != nil:
			b.OfToolResult.CacheControl = cc
		default:
			continue
		}
		return
	}
}

func content(m provider.Message) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	for _, part := range m.Parts {
		switch part.Kind {
		case provider.PartText:
			if part.Text == "" {
				continue // the API rejects empty text blocks
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: part.Text}})
		case provider.PartThinking:
			if m.Role != provider.RoleAssistant {
				continue
			}
			if part.Signature == "" {
				// Unsigned thinking (from another provider) cannot be sent
				// back; the API would reject the whole request.
				continue
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{
				Thinking:  part.Text,
				Signature: part.Signature,
			}})
		case provider.PartToolUse:
			input := part.Input
			if len(input) == 0 || !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
				ID:    part.ToolCallID,
				Name:  part.ToolName,
				Input: input,
			}})
		case provider.PartToolResult:
			r := &sdk.ToolResultBlockParam{ToolUseID: part.ToolCallID}
			if part.Text != "" {
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: part.Text}}}
			}
			if part.IsError {
				r.IsError = sdk.Bool(true)
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: r})
		default:
			return nil, fmt.Errorf("unknown part kind %q", part.Kind)
		}
	}
	if len(blocks) == 0 {
		// An empty message is invalid; keep the turn structure with a
		// placeholder rather than fail the whole request.
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: "(empty)"}})
	}
	return blocks, nil
}
