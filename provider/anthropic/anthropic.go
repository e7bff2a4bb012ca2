// Package anthropic talks to the Anthropic Messages API: streaming,
// parallel tool use, thinking blocks passed back with their signatures,
// and cache_control on the stable prefix. Requests are encoded here and
// the stream read with provider's SSE reader, with the headers the
// official SDK sent; the SDK carried only that, at a large part of the
// binary.
package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"

	"github.com/bridle-dev/bridle/provider"
)

// DefaultBaseURL is the Anthropic API.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header: the version of the API the
// request and event shapes here follow (the one SDK v2.17.0 pinned).
const APIVersion = "2026-10-21"

// Config says how to reach the API. Nothing is read from the environment
// here; the caller resolves keys and URLs.
type Config struct {
	// Name labels errors and events; "anthropic" when empty.
	Name string
	// APIKey is sent as x-api-key. AuthToken, for gateways that want a
	// bearer token instead (ANTHROPIC_AUTH_TOKEN), is used when APIKey is
	// empty.
	APIKey    string
	AuthToken string
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// Headers are added to every request.
	Headers map[string]string
	// HTTPClient defaults to a client without a timeout: a long answer may
	// stream for many minutes, and cancellation comes from the context.
	HTTPClient *http.Client
}

// Client is a provider.Provider for the Messages API.
type Client struct {
	ep  provider.Endpoint
	enc provider.BodyEncoder
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	// The key goes as a bearer token, as the SDK sent it; a gateway's
	// token the same way when there is no key.
	ep := provider.NewEndpoint(cmp.Or(cfg.Name, "anthropic"), cmp.Or(cfg.BaseURL, DefaultBaseURL), cfg.HTTPClient,
		cmp.Or(cfg.APIKey, cfg.AuthToken), map[string]string{"Anthropic-Version": APIVersion}, cfg.Headers)
	return &Client{ep: ep}
}

// Name implements provider.Provider.
func (c *Client) Name() string { return c.ep.Name }

// Stream implements provider.Provider.
func (c *Client) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	return func(yield func(provider.Delta, error) bool) {
		resp, cancel, err := c.ep.Open(ctx, "/v1/messages", req, c.body, c.classify)
		if err != nil {
			yield(provider.Delta{}, err)
			return
		}
		d := decoder{name: c.ep.Name, blocks: map[int64]block{}}
		defer func() {
			if d.done {
				provider.Release(resp.Body, cancel)
				return
			}
			resp.Body.Close()
			cancel()
		}()
		sse := provider.NewSSE(resp.Body)
		for sse.Next() {
			ev := sse.Event()
			switch ev.Type {
			case "", "ping":
				continue
			case "error":
				// An error event inside a 200 stream: its type decides.
				yield(provider.Delta{}, c.classify(ctx, &provider.StatusError{Status: resp.StatusCode, Header: resp.Header, Body: ev.Data}, d.output))
				return
			}
			if len(ev.Data) == 0 {
				continue
			}
			var se event
			if err := json.Unmarshal(ev.Data, &se); err != nil {
				yield(provider.Delta{}, c.classify(ctx, fmt.Errorf("reading the stream: %w", err), d.output))
				return
			}
			if !d.event(&se, yield) || d.done {
				return
			}
		}
		if err := sse.Err(); err != nil {
			yield(provider.Delta{}, c.classify(ctx, err, d.output))
			return
		}
		yield(provider.Delta{}, provider.Truncated(c.ep.Name, d.output))
	}
}

// event is one stream event, with the fields bridle reads.
type event struct {
	Type    string `json:"type"`
	Index   int64  `json:"index"`
	Message struct {
		Usage usage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Text      string `json:"text"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage usage `json:"usage"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// blockKind is what a content block of the response holds.
type block struct {
	kind string // text, thinking, tool_use, redacted_thinking, …
	tool int    // ordinal among the response's tool calls
}

// decoder turns Messages API stream events into deltas.
type decoder struct {
	name   string
	blocks map[int64]block
	tools  int
	usage  provider.Usage
	stop   provider.StopReason
	output bool // text, thinking or a tool call has been yielded
	done   bool
}

// event handles one stream event; it returns false when the consumer
// stopped.
func (d *decoder) event(ev *event, yield func(provider.Delta, error) bool) bool {
	emit := func(delta provider.Delta) bool {
		if delta.Kind != provider.DeltaUsage && delta.Kind != provider.DeltaStop {
			d.output = true
		}
		return yield(delta, nil)
	}
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		d.usage = provider.Usage{
			InputTokens:      int(u.InputTokens),
			OutputTokens:     int(u.OutputTokens),
			CacheReadTokens:  int(u.CacheReadInputTokens),
			CacheWriteTokens: int(u.CacheCreationInputTokens),
		}
		return emit(provider.Delta{Kind: provider.DeltaUsage, Usage: d.usage})
	case "content_block_start":
		cb := ev.ContentBlock
		b := block{kind: cb.Type}
		switch cb.Type {
		case "tool_use":
			b.tool = d.tools
			d.tools++
			d.blocks[ev.Index] = b
			return emit(provider.Delta{Kind: provider.DeltaToolStart, Index: b.tool, ToolCallID: cb.ID, ToolName: cb.Name})
		case "text":
			d.blocks[ev.Index] = b
			if cb.Text != "" {
				return emit(provider.Delta{Kind: provider.DeltaText, Text: cb.Text})
			}
		case "thinking":
			d.blocks[ev.Index] = b
			if cb.Thinking != "" || cb.Signature != "" {
				return emit(provider.Delta{Kind: provider.DeltaThinking, Text: cb.Thinking, Signature: cb.Signature})
			}
		default:
			// redacted_thinking and server-tool blocks have no neutral
			// form yet; they are skipped rather than misreported.
			d.blocks[ev.Index] = b
		}
	case "content_block_delta":
		b := d.blocks[ev.Index]
		switch ev.Delta.Type {
		case "text_delta":
			return emit(provider.Delta{Kind: provider.DeltaText, Text: ev.Delta.Text})
		case "thinking_delta":
			return emit(provider.Delta{Kind: provider.DeltaThinking, Text: ev.Delta.Thinking})
		case "signature_delta":
			return emit(provider.Delta{Kind: provider.DeltaThinking, Signature: ev.Delta.Signature})
		case "input_json_delta":
			if b.kind == "tool_use" && ev.Delta.PartialJSON != "" {
				return emit(provider.Delta{Kind: provider.DeltaToolArgs, Index: b.tool, Text: ev.Delta.PartialJSON})
			}
		}
	case "content_block_stop":
		if b := d.blocks[ev.Index]; b.kind == "tool_use" {
			return emit(provider.Delta{Kind: provider.DeltaToolEnd, Index: b.tool})
		}
	case "message_delta":
		d.stop = stopReason(ev.Delta.StopReason)
		// The usage here is cumulative; fields the event leaves at zero
		// keep the values message_start gave.
		u := ev.Usage
		if u.OutputTokens > 0 {
			d.usage.OutputTokens = int(u.OutputTokens)
		}
		if u.InputTokens > 0 {
			d.usage.InputTokens = int(u.InputTokens)
		}
		if u.CacheReadInputTokens > 0 {
			d.usage.CacheReadTokens = int(u.CacheReadInputTokens)
		}
		if u.CacheCreationInputTokens > 0 {
			d.usage.CacheWriteTokens = int(u.CacheCreationInputTokens)
		}
		return emit(provider.Delta{Kind: provider.DeltaUsage, Usage: d.usage})
	case "message_stop":
		d.done = true
		stop := d.stop
		if stop == "" {
			stop = provider.StopEndTurn
		}
		return emit(provider.Delta{Kind: provider.DeltaStop, StopReason: stop})
	}
	return true
}

func stopReason(s string) provider.StopReason {
	switch s {
	case "tool_use":
		return provider.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return provider.StopMaxTokens
	case "refusal":
		return provider.StopRefusal
	case "":
		return ""
	default: // end_turn, stop_sequence, pause_turn
		return provider.StopEndTurn
	}
}
