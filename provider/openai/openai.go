// Package openai talks to any server that speaks OpenAI's Chat Completions
// API: OpenAI itself, and local servers (Ollama, vLLM, llama.cpp's server,
// LM Studio) at their own base URLs. Requests are encoded here and the
// stream read with provider's SSE reader: the official SDK carried only
// that, at a third of the binary.
package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"

	"github.com/bridle-dev/bridle/provider"
)

// Base URLs of the servers bridle knows; each is the default for the
// provider of the same name.
const (
	OpenAIBaseURL   = "https://api.openai.com/v1"
	OllamaBaseURL   = "http://localhost:11434/v1"
	VLLMBaseURL     = "http://localhost:8000/v1"
	LlamaCPPBaseURL = "http://localhost:8080/v1"
	LMStudioBaseURL = "http://localhost:1234/v1"
)

// Config says how to reach a server. Nothing is read from the environment
// here; the caller resolves keys and URLs.
type Config struct {
	// Name labels errors and events ("openai", "ollama", …).
	Name string
	// APIKey is sent as a bearer token; local servers need none.
	APIKey string
	// BaseURL is the URL up to and including /v1.
	BaseURL string
	// Organization and Project select an OpenAI organisation and project.
	Organization, Project string
	// Headers are added to every request.
	Headers map[string]string
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens,
	// for servers that only know the older field.
	LegacyMaxTokens bool
	// HTTPClient defaults to a client without a timeout; cancellation
	// comes from the context.
	HTTPClient *http.Client
}

// Client is a provider.Provider for Chat Completions.
type Client struct {
	ep              provider.Endpoint
	legacyMaxTokens bool
	enc             provider.BodyEncoder
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	own := map[string]string{}
	if cfg.Organization != "" {
		own["OpenAI-Organization"] = cfg.Organization
	}
	if cfg.Project != "" {
		own["OpenAI-Project"] = cfg.Project
	}
	ep := provider.NewEndpoint(cmp.Or(cfg.Name, "openai"), cmp.Or(cfg.BaseURL, OpenAIBaseURL), cfg.HTTPClient, cfg.APIKey, own, cfg.Headers)
	return &Client{ep: ep, legacyMaxTokens: cfg.LegacyMaxTokens}
}

// Name implements provider.Provider.
func (c *Client) Name() string { return c.ep.Name }

// Stream implements provider.Provider.
func (c *Client) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	return func(yield func(provider.Delta, error) bool) {
		resp, cancel, err := c.ep.Open(ctx, "/chat/completions", req, c.body, c.classify)
		if err != nil {
			yield(provider.Delta{}, err)
			return
		}
		d := decoder{calls: map[int64]*call{}}
		ended := false // the stream ended cleanly
		defer func() {
			if ended {
				provider.Release(resp.Body, cancel)
				return
			}
			resp.Body.Close()
			cancel()
		}()
		sse := provider.NewSSE(resp.Body)
		for sse.Next() {
			data := sse.Event().Data
			if len(data) >= 6 && string(data[:6]) == "[DONE]" {
				break
			}
			var ch chunk
			if err := json.Unmarshal(data, &ch); err != nil {
				yield(provider.Delta{}, c.classify(ctx, fmt.Errorf("reading the stream: %w", err), d.output))
				return
			}
			if len(ch.Error) > 0 && string(ch.Error) != "null" {
				yield(provider.Delta{}, c.classify(ctx, &streamError{data: string(data)}, d.output))
				return
			}
			if !d.chunk(&ch, yield) {
				return
			}
		}
		if err := sse.Err(); err != nil {
			yield(provider.Delta{}, c.classify(ctx, err, d.output))
			return
		}
		ended = true
		if d.stop == "" {
			// No finish_reason: the server or a proxy closed the stream
			// early. [DONE] alone does not prove the answer is whole.
			yield(provider.Delta{}, provider.Truncated(c.ep.Name, d.output))
			return
		}
		if d.haveUsage && !yield(provider.Delta{Kind: provider.DeltaUsage, Usage: d.usage}, nil) {
			return
		}
		yield(provider.Delta{Kind: provider.DeltaStop, StopReason: d.stop}, nil)
	}
}

// chunk is one event of the stream, with the fields bridle reads.
type chunk struct {
	Choices []struct {
		Index int64 `json:"index"`
		Delta struct {
			Content string `json:"content"`
			// Servers other than OpenAI stream reasoning under names
			// OpenAI does not define; see reasoning.
			ReasoningContent json.RawMessage `json:"reasoning_content"`
			Reasoning        json.RawMessage `json:"reasoning"`
			ToolCalls        []struct {
				Index    int64  `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        *int64 `json:"prompt_tokens"`
		CompletionTokens    int64  `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	// Error is an error object sent in the middle of a 200 stream.
	Error json.RawMessage `json:"error"`
}

// streamError is an error object the server sent inside the stream.
type streamError struct{ data string }

func (e *streamError) Error() string { return "received error while streaming: " + e.data }

// call is one tool call being streamed.
type call struct {
	id      string
	ordinal int
	open    bool
}

// decoder turns chunks into deltas.
type decoder struct {
	calls     map[int64]*call // by the server's index
	n         int             // tool calls started
	stop      provider.StopReason
	usage     provider.Usage
	haveUsage bool
	output    bool
}

func (d *decoder) chunk(ch *chunk, yield func(provider.Delta, error) bool) bool {
	emit := func(delta provider.Delta) bool {
		d.output = true
		return yield(delta, nil)
	}
	if u := ch.Usage; u != nil && u.PromptTokens != nil {
		cached := int(u.PromptTokensDetails.CachedTokens)
		// prompt_tokens counts cached tokens too; bridle's Usage, like
		// Anthropic's, keeps them apart so the sum is the whole prompt.
		d.usage = provider.Usage{
			InputTokens:     int(*u.PromptTokens) - cached,
			OutputTokens:    int(u.CompletionTokens),
			CacheReadTokens: cached,
		}
		d.haveUsage = true
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // bridle asks for one choice
		}
		delta := choice.Delta
		if r := reasoning(delta.ReasoningContent, delta.Reasoning); r != "" {
			if !emit(provider.Delta{Kind: provider.DeltaThinking, Text: r}) {
				return false
			}
		}
		if delta.Content != "" {
			if !emit(provider.Delta{Kind: provider.DeltaText, Text: delta.Content}) {
				return false
			}
		}
		for _, tc := range delta.ToolCalls {
			cl := d.calls[tc.Index]
			// A new id at a known index is a new call: some servers send
			// every complete call at index 0.
			if cl == nil || (tc.ID != "" && cl.id != "" && tc.ID != cl.id) {
				if cl != nil && cl.open {
					cl.open = false
					if !emit(provider.Delta{Kind: provider.DeltaToolEnd, Index: cl.ordinal}) {
						return false
					}
				}
				id := tc.ID
				if id == "" {
					id = fmt.Sprintf("call_%d", d.n)
				}
				cl = &call{id: id, ordinal: d.n, open: true}
				d.n++
				d.calls[tc.Index] = cl
				if !emit(provider.Delta{Kind: provider.DeltaToolStart, Index: cl.ordinal, ToolCallID: id, ToolName: tc.Function.Name}) {
					return false
				}
			}
			if tc.Function.Arguments != "" {
				if !emit(provider.Delta{Kind: provider.DeltaToolArgs, Index: cl.ordinal, Text: tc.Function.Arguments}) {
					return false
				}
			}
		}
		if choice.FinishReason != "" {
			for i := range d.n {
				for _, cl := range d.calls {
					if cl.ordinal == i && cl.open {
						cl.open = false
						if !emit(provider.Delta{Kind: provider.DeltaToolEnd, Index: i}) {
							return false
						}
					}
				}
			}
			d.stop = finishReason(choice.FinishReason, d.n > 0)
		}
	}
	return true
}

// reasoning returns the reasoning text that OpenAI-compatible servers add
// to a delta under names OpenAI does not define: reasoning_content (vLLM,
// llama.cpp, DeepSeek) or reasoning (Ollama). Either may be null or, on
// some servers, not a string; those are not reasoning text.
func reasoning(fields ...json.RawMessage) string {
	for _, f := range fields {
		var s string
		if len(f) > 0 && json.Unmarshal(f, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func finishReason(s string, calls bool) provider.StopReason {
	switch s {
	case "tool_calls", "function_call":
		return provider.StopToolUse
	case "length":
		return provider.StopMaxTokens
	case "content_filter":
		return provider.StopRefusal
	default:
		// Some servers say "stop" after tool calls.
		if calls {
			return provider.StopToolUse
		}
		return provider.StopEndTurn
	}
}
