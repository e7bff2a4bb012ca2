// Package openai talks to any server that speaks OpenAI's Chat Completions
// API, through the official SDK: OpenAI itself, and local servers (Ollama,
// vLLM, llama.cpp's server, LM Studio) at their own base URLs.
package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

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
	name            string
	baseURL         string
	legacyMaxTokens bool
	sdk             sdk.Client
	enc             provider.BodyEncoder
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	if cfg.Name == "" {
		cfg.Name = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = OpenAIBaseURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	// The SDK reads OPENAI_* variables itself and offers no public way to
	// stop it, so every value it could pick up is set explicitly here;
	// otherwise an OpenAI key would be sent to a local server.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithAPIKey(cfg.APIKey),
		option.WithAdminAPIKey(""),
		// Retries belong to provider.WithRetry.
		option.WithMaxRetries(0),
	}
	if cfg.Organization != "" {
		opts = append(opts, option.WithOrganization(cfg.Organization))
	} else {
		opts = append(opts, option.WithHeaderDel("OpenAI-Organization"))
	}
	if cfg.Project != "" {
		opts = append(opts, option.WithProject(cfg.Project))
	} else {
		opts = append(opts, option.WithHeaderDel("OpenAI-Project"))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Client{
		name:            cfg.Name,
		baseURL:         cfg.BaseURL,
		legacyMaxTokens: cfg.LegacyMaxTokens,
		sdk:             sdk.NewClient(opts...),
	}
}

// Name implements provider.Provider.
func (c *Client) Name() string { return c.name }

// Stream implements provider.Provider.
func (c *Client) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	return func(yield func(provider.Delta, error) bool) {
		b, err := c.body(req)
		if err != nil {
			yield(provider.Delta{}, &provider.Error{Provider: c.name, Kind: provider.ErrBadRequest, Message: err.Error(), Err: err})
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		var resp *http.Response
		// The body replaces the (empty) parameters; see wireRequest.
		stream := c.sdk.Chat.Completions.NewStreaming(ctx, sdk.ChatCompletionNewParams{Model: req.Model},
			option.WithRequestBody("application/json", b), option.WithResponseInto(&resp))
		d := decoder{calls: map[int64]*call{}}
		ended := false // the stream ended cleanly
		defer func() {
			if ended && resp != nil {
				provider.Release(resp.Body, cancel)
				return
			}
			stream.Close()
			cancel()
		}()
		for stream.Next() {
			chunk := stream.Current()
			if !d.chunk(&chunk, yield) {
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(provider.Delta{}, c.classify(ctx, err, d.output))
			return
		}
		ended = true
		if d.stop == "" {
			// No finish_reason: the server or a proxy closed the stream
			// early. [DONE] alone does not prove the answer is whole.
			yield(provider.Delta{}, provider.Truncated(c.name, d.output))
			return
		}
		if d.haveUsage && !yield(provider.Delta{Kind: provider.DeltaUsage, Usage: d.usage}, nil) {
			return
		}
		yield(provider.Delta{Kind: provider.DeltaStop, StopReason: d.stop}, nil)
	}
}

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

func (d *decoder) chunk(ch *sdk.ChatCompletionChunk, yield func(provider.Delta, error) bool) bool {
	emit := func(delta provider.Delta) bool {
		d.output = true
		return yield(delta, nil)
	}
	if ch.JSON.Usage.Valid() && ch.Usage.JSON.PromptTokens.Valid() {
		u := ch.Usage
		cached := int(u.PromptTokensDetails.CachedTokens)
		// prompt_tokens counts cached tokens too; bridle's Usage, like
		// Anthropic's, keeps them apart so the sum is the whole prompt.
		d.usage = provider.Usage{
			InputTokens:     int(u.PromptTokens) - cached,
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
		if r := reasoning(delta); r != "" {
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
// llama.cpp, DeepSeek) or reasoning (Ollama).
func reasoning(d sdk.ChatCompletionChunkChoiceDelta) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		// Extra fields never report Valid; their raw text is what counts.
		f, ok := d.JSON.ExtraFields[key]
		if !ok || f.Raw() == "" {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
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
