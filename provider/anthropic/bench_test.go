package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/provider"
)

// BenchmarkRequestBody is the CPU part of sending a request: encoding 30
// tool-call turns (about 100 KB) of history.
func BenchmarkRequestBody(b *testing.B) {
	req := provider.Request{Model: "m", System: []provider.SystemBlock{{Text: "system", Cache: true}}}
	for i := range 30 {
		id := fmt.Sprintf("toolu_%03d", i)
		req.Messages = append(req.Messages,
			provider.Message{Role: provider.RoleAssistant, Parts: []provider.Part{
				{Kind: provider.PartText, Text: "Let me look at the next file."},
				{Kind: provider.PartToolUse, ToolCallID: id, ToolName: "read_file", Input: json.RawMessage(`{"path":"parser/parse.go"}`)},
			}},
			provider.Message{Role: provider.RoleUser, Parts: []provider.Part{
				{Kind: provider.PartToolResult, ToolCallID: id, Text: strings.Repeat("func parse(line string) (Node, error) {\n", 80)},
			}, Cache: i == 29})
	}
	out, err := body(req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for range b.N {
		body(req)
	}
}
