package ctxbench

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/provider"
)

// observer stands between the session and the scripted model, as the
// model's API would: it measures every request exactly (o200k_base),
// checks it, and reports that size back as the usage, the way a real
// provider does.
type observer struct {
	inner  provider.Provider
	truth  *truth
	window int
	first  string

	mu     sync.Mutex
	pins   []string
	prev   []byte
	sizes  []int // exact size of each agent request, in order
	fixed  int   // system prompt and tool catalogue, as measured
	res    Result
	failed string
}

func (o *observer) open(context.Context, string) (provider.Provider, error) { return o, nil }

func (o *observer) Name() string { return "ctxbench" }

// pin notes a constraint or decision the user gave: every later request
// must hold it.
func (o *observer) pin(text string) {
	o.mu.Lock()
	o.pins = append(o.pins, text)
	o.mu.Unlock()
}

// Per-part overheads of the simulated chat format, the same convention
// contextwin counts with.
const (
	partOverhead = 4
	toolOverhead = 8
)

func (o *observer) size(req provider.Request) (total, fixed int) {
	for _, b := range req.System {
		fixed += o.truth.count(b.Text) + partOverhead
	}
	for _, t := range req.Tools {
		fixed += o.truth.count(t.Name) + o.truth.count(t.Description) + o.truth.count(string(t.InputSchema)) + toolOverhead
	}
	total = fixed
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			switch p.Kind {
			case provider.PartToolUse:
				total += o.truth.count(p.ToolName) + o.truth.count(string(p.Input)) + toolOverhead
			case provider.PartToolResult:
				total += o.truth.count(p.Text) + toolOverhead
			default:
				total += o.truth.count(p.Text) + partOverhead
			}
		}
	}
	return total, fixed
}

// Stream implements provider.Provider.
func (o *observer) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	n, fixed := o.size(req)
	o.mu.Lock()
	if n+req.MaxTokens > o.window {
		o.res.Overflows++
	}
	if len(req.System) > 0 && strings.HasPrefix(req.System[0].Text, contextwin.SummaryMarker) {
		o.res.SummaryRequests++
		o.res.SummaryTokens += int64(n)
	} else {
		o.res.Requests++
		o.res.Tokens += int64(n)
		o.sizes = append(o.sizes, n)
		o.fixed = fixed
		if o.complete(req) {
			o.res.Complete++
		}
		prefix := stablePrefix(req)
		if o.prev != nil {
			o.res.Pairs++
			if bytes.Equal(prefix, o.prev) {
				o.res.StablePairs++
			}
		}
		o.prev = prefix
	}
	o.mu.Unlock()
	inner := o.inner.Stream(ctx, req)
	return func(yield func(provider.Delta, error) bool) {
		for d, err := range inner {
			if d.Kind == provider.DeltaUsage {
				d.Usage = provider.Usage{InputTokens: n, OutputTokens: d.Usage.OutputTokens}
			}
			if !yield(d, err) {
				return
			}
		}
	}
}

// complete reports whether req holds the first request verbatim and every
// pin given so far.
func (o *observer) complete(req provider.Request) bool {
	var b strings.Builder
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			b.WriteString(p.Text)
			b.WriteByte('\n')
		}
	}
	text := b.String()
	if !strings.Contains(text, o.first) {
		return false
	}
	for _, p := range o.pins {
		if !strings.Contains(text, p) {
			return false
		}
	}
	return true
}

// stablePrefix is the request's bytes up to its last stable block: the
// system blocks, the tool catalogue and the first message (the first
// request, the pins and the summary), which carries the cache mark.
func stablePrefix(req provider.Request) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(req.System)
	enc.Encode(req.Tools)
	for _, m := range req.Messages {
		enc.Encode(m)
		if m.Cache {
			break
		}
	}
	return b.Bytes()
}

func (o *observer) result() Result {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.res
}
