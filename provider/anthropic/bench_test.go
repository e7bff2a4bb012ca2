package anthropic

import (
	"testing"

	"github.com/bridle-dev/bridle/provider/providertest"
)

// BenchmarkRequestBody is the CPU part of sending a request: encoding 30
// tool-call turns (about 100 KB) of history.
func BenchmarkRequestBody(b *testing.B) { providertest.BenchRequestBody(b, New(Config{}).body) }
