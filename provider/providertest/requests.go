package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/provider"
)

// Collect runs a stream to its end and returns what it amounted to, every
// delta, and the error that ended it, if any.
func Collect(t testing.TB, p provider.Provider, req provider.Request) (provider.Response, []provider.Delta, error) {
	t.Helper()
	var c provider.Collector
	var deltas []provider.Delta
	for d, err := range p.Stream(context.Background(), req) {
		if err != nil {
			return c.Response(), deltas, err
		}
		c.Add(d)
		deltas = append(deltas, d)
	}
	return c.Response(), deltas, nil
}

// Hello is the smallest request: one user message.
func Hello(model string) provider.Request {
	return provider.Request{
		Model:     model,
		MaxTokens: 1024,
		Messages:  []provider.Message{{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: "Hello"}}}},
	}
}

// ImageRequest is a user's message of text and a PNG image (ref
// image:sha256:ab, loaded), for the checks of how each API is sent one.
func ImageRequest(model string) provider.Request {
	return provider.Request{Model: model, MaxTokens: 1024, Messages: []provider.Message{
		{Role: provider.RoleUser, Parts: []provider.Part{
			{Kind: provider.PartText, Text: "what is this?"},
			{Kind: provider.PartImage, MimeType: "image/png", Data: []byte("\x89PNG fake"), Ref: "image:sha256:ab"},
		}},
	}}
}

// ToolHistory appends n tool-call turns (about 3.3 KB each) to req: a
// typical long history, for benchmarks of request encoding.
func ToolHistory(req provider.Request, tool string, n int) provider.Request {
	for i := range n {
		id := fmt.Sprintf("toolu_%03d", i)
		req.Messages = append(req.Messages,
			provider.Message{Role: provider.RoleAssistant, Parts: []provider.Part{
				{Kind: provider.PartText, Text: "Let me look at the next file."},
				{Kind: provider.PartToolUse, ToolCallID: id, ToolName: tool, Input: json.RawMessage(`{"path":"parser/parse.go"}`)},
			}},
			provider.Message{Role: provider.RoleUser, Parts: []provider.Part{
				{Kind: provider.PartToolResult, ToolCallID: id, Text: strings.Repeat("func parse(line string) (Node, error) {\n", 80)},
			}},
		)
	}
	return req
}

// BenchRequestBody measures encode on the CPU part of sending a request:
// 30 tool-call turns (about 100 KB) of history, the system prompt and
// the last message marked for caching.
func BenchRequestBody(b *testing.B, encode func(provider.Request) ([]byte, error)) {
	req := provider.Request{Model: "m", System: []provider.SystemBlock{{Text: "system", Cache: true}}}
	req = ToolHistory(req, "read_file", 30)
	req.Messages[len(req.Messages)-1].Cache = true
	out, err := encode(req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for range b.N {
		encode(req)
	}
}
