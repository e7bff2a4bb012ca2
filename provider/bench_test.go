package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/anthropic"
	"github.com/bridle-dev/bridle/provider/openai"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// benchClients are the real clients, each against a local server replaying
// a recorded tool-call response.
func benchClients(b testing.TB) map[string]func() (provider.Provider, *providertest.Server) {
	return map[string]func() (provider.Provider, *providertest.Server){
		"anthropic": func() (provider.Provider, *providertest.Server) {
			srv := providertest.NewServer(b, providertest.Reply{Body: providertest.Load(b, "../testdata/anthropic/tool_use.sse")})
			return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL}), srv
		},
		"openai": func() (provider.Provider, *providertest.Server) {
			srv := providertest.NewServer(b, providertest.Reply{Body: providertest.Load(b, "../testdata/openai/tool_calls.sse")})
			return openai.New(openai.Config{APIKey: "k", BaseURL: srv.URL + "/v1"}), srv
		},
	}
}

// history builds a realistic request: a system prompt, ten tools and
// turns of tool calls with their results (about 100 KB).
func history(turns int) provider.Request {
	req := provider.Request{
		Model:      "m",
		MaxTokens:  8192,
		System:     []provider.SystemBlock{{Text: strings.Repeat("You are a careful coding agent. ", 60), Cache: true}},
		CacheTools: true,
	}
	for i := range 10 {
		req.Tools = append(req.Tools, provider.Tool{
			Name:        fmt.Sprintf("tool_%d", i),
			Description: "Does one thing well and says what went wrong when it fails.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}`),
		})
	}
	req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: "Fix the failing test in the parser package."}}, Cache: true})
	return providertest.ToolHistory(req, "tool_1", turns)
}

// BenchmarkMicroToolLoopGap measures the provider client's part of the
// tool loop (session's BenchmarkToolLoopGap measures the whole loop):
// from reading the last event of a tool-call response to having written
// the next request to the connection: adding the calls and their results
// to the request, encoding about 100 KB of history and handing it to the
// transport. Both ends are taken on the client (httptrace's
// WroteRequest), so the fake server's own scheduling on this machine is
// not counted.
func BenchmarkMicroToolLoopGap(b *testing.B) {
	for name, open := range benchClients(b) {
		b.Run(name, func(b *testing.B) {
			p, _ := open()
			req := history(30)
			var lastByte, headers, wrote time.Time
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				WroteHeaders: func() { headers = time.Now() },
				WroteRequest: func(httptrace.WroteRequestInfo) { wrote = time.Now() },
			})
			stream := func() provider.Response {
				var c provider.Collector
				for d, err := range p.Stream(ctx, req) {
					if err != nil {
						b.Fatal(err)
					}
					c.Add(d)
					if d.Kind == provider.DeltaStop {
						lastByte = time.Now()
					}
				}
				return c.Response()
			}
			resp := stream() // warm the connection
			var gap, first time.Duration
			b.ResetTimer()
			for range b.N {
				prev := lastByte
				// The next request: the assistant's calls and their results.
				var calls, results []provider.Part
				for _, tc := range resp.ToolCalls {
					calls = append(calls, provider.Part{Kind: provider.PartToolUse, ToolCallID: tc.ID, ToolName: tc.Name, Input: tc.Input})
					results = append(results, provider.Part{Kind: provider.PartToolResult, ToolCallID: tc.ID, Text: "ok"})
				}
				n := len(req.Messages)
				req.Messages = append(req.Messages,
					provider.Message{Role: provider.RoleAssistant, Parts: calls},
					provider.Message{Role: provider.RoleUser, Parts: results})
				resp = stream()
				gap += wrote.Sub(prev)
				first += headers.Sub(prev)
				req.Messages = req.Messages[:n] // keep the size steady
			}
			b.ReportMetric(float64(gap.Microseconds())/float64(b.N), "µs-gap")
			b.ReportMetric(float64(first.Microseconds())/float64(b.N), "µs-to-first-byte-sent")
		})
	}
}
