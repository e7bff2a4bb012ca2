package anthropic

import (
	"testing"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// BenchmarkRequestBody is the CPU part of sending a request: encoding 30
// tool-call turns (about 100 KB) of history.
func BenchmarkRequestBody(b *testing.B) {
	req := provider.Request{Model: "m", System: []provider.SystemBlock{{Text: "system", Cache: true}}}
	req = providertest.ToolHistory(req, "read_file", 30)
	req.Messages[len(req.Messages)-1].Cache = true
	c := New(Config{})
	out, err := c.body(req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for range b.N {
		c.body(req)
	}
}
