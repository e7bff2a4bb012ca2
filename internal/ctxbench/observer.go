package ctxbench

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"regexp"
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
	// input is the session's input budget (window less the answer's
	// reserve): the per-output cap is a share of it.
	input int
	first string

	mu   sync.Mutex
	pins []string
	prev []byte
	// prevMsgs and prevSystem are the previous agent request's bytes.
	prevMsgs   [][]byte
	prevSystem []byte
	sizes      []int // exact size of each agent request, in order
	fixed      int   // system prompt and tool catalogue, as measured
	res        Result
	// run counts the summarizer requests since the last agent request:
	// one compaction's calls.
	run int
	// outputs holds, per tool call (its input), how each of its shown forms
	// fared: the largest share of the input budget it took, and whether
	// a dropped or cut form said how to get the rest.
	outputs map[string]*shownOutput
}

// shownOutput is what the requests showed of one tool output.
type shownOutput struct {
	share            float64 // the largest, exactly counted, of the input budget
	shortened        bool    // dropped to its address or cut, in some request
	noAddress        bool    // one such form named no read_artifact id
	shownWhole, then bool    // shown whole, and cut (not dropped) after that
}

// checkOutputs notes the tool results of an agent request: their exact
// share of the input budget, and whether a dropped or cut one names the
// id read_artifact returns it by.
func (o *observer) checkOutputs(req provider.Request) {
	if o.outputs == nil {
		o.outputs = map[string]*shownOutput{}
	}
	// A call's input (emit's seed) names its output across requests: the
	// scripted model reuses call ids.
	input := map[string]string{}
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Kind == provider.PartToolUse {
				input[p.ToolCallID] = string(p.Input)
			}
			if p.Kind != provider.PartToolResult || p.IsError {
				continue
			}
			key := input[p.ToolCallID]
			so := o.outputs[key]
			if so == nil {
				so = &shownOutput{}
				o.outputs[key] = so
			}
			so.share = max(so.share, float64(o.truth.count(p.Text))/float64(o.input))
			short := strings.Contains(p.Text, "dropped to save context") || strings.Contains(p.Text, "cut here to fit the context window")
			if !short {
				so.shownWhole = true
				continue
			}
			so.shortened = true
			so.then = so.then || so.shownWhole && strings.Contains(p.Text, "cut here to fit the context window")
			if !addressed.MatchString(p.Text) {
				so.noAddress = true
			}
		}
	}
}

// addressed finds the id read_artifact returns an output by: an
// artifact's or a tool result's (r<seq>).
var addressed = regexp.MustCompile(`read_artifact [A-Za-z0-9_.]+`)

func (o *observer) open(context.Context, string, string) (provider.Provider, error) { return o, nil }

func (o *observer) Name() string { return "ctxbench" }

// pin notes a constraint or decision the user gave: every later request
// must hold it.
func (o *observer) pin(text string) {
	o.mu.Lock()
	o.pins = append(o.pins, text)
	o.mu.Unlock()
}

// The ground truth does not use contextwin's own accounting (its per-part
// overheads): it counts, with the exact tokenizer, what the model reads
// in OpenAI's chat format, with OpenAI's published per-message accounting
// (the cookbook's num_tokens_from_messages: 3 tokens a message, 3 to
// prime the reply). The system blocks are one system message, tool
// results their own tool messages, an assistant's tool calls the JSON of
// their name and arguments, and the catalogue the JSON of the tools as
// the API takes them.
const (
	perMessage = 3
	replyPrime = 3
)

// size returns the request's exact size, the size of its system blocks
// and tool catalogue, and the size of each message.
func (o *observer) size(req provider.Request) (total, fixed int, msgs []int) {
	var system []string
	for _, b := range req.System {
		system = append(system, b.Text)
	}
	if len(system) > 0 {
		fixed += perMessage + o.truth.count(strings.Join(system, "\n\n"))
	}
	if len(req.Tools) > 0 {
		type fn struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		type tool struct {
			Type     string `json:"type"`
			Function fn     `json:"function"`
		}
		var tools []tool
		for _, t := range req.Tools {
			tools = append(tools, tool{Type: "function", Function: fn{t.Name, t.Description, t.InputSchema}})
		}
		b, _ := json.Marshal(tools)
		fixed += o.truth.count(string(b))
	}
	total = fixed + replyPrime
	for _, m := range req.Messages {
		n := 0
		var text []string
		for _, p := range m.Parts {
			switch p.Kind {
			case provider.PartToolUse:
				call, _ := json.Marshal(struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				}{p.ToolName, string(p.Input)})
				n += o.truth.count(string(call))
			case provider.PartToolResult:
				n += perMessage + o.truth.count(p.Text)
			case provider.PartThinking:
				// Not sent back in the chat format.
			default:
				text = append(text, p.Text)
			}
		}
		n += perMessage + o.truth.count(strings.Join(text, "\n"))
		msgs = append(msgs, n)
		total += n
	}
	return total, fixed, msgs
}

// cached returns how many of req's tokens repeat the previous request
// byte for byte from the start: what a prompt cache can serve.
func (o *observer) cached(req provider.Request, fixed int, sizes []int) int {
	enc := make([][]byte, len(req.Messages))
	for i, m := range req.Messages {
		m.Cache = false // the marks move; the bytes sent do not
		enc[i], _ = json.Marshal(m)
	}
	defer func() { o.prevMsgs, o.prevSystem = enc, systemBytes(req) }()
	if o.prevMsgs == nil || !bytes.Equal(o.prevSystem, systemBytes(req)) {
		return 0
	}
	n := fixed
	for i := range min(len(enc), len(o.prevMsgs)) {
		if !bytes.Equal(enc[i], o.prevMsgs[i]) {
			break
		}
		n += sizes[i]
	}
	return n
}

func systemBytes(req provider.Request) []byte {
	b, _ := json.Marshal(struct {
		S []provider.SystemBlock
		T []provider.Tool
	}{req.System, req.Tools})
	return b
}

// Stream implements provider.Provider.
func (o *observer) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	n, fixed, sizes := o.size(req)
	o.mu.Lock()
	if n+req.MaxTokens > o.window {
		o.res.Overflows++
	}
	if len(req.System) > 0 && strings.HasPrefix(req.System[0].Text, contextwin.SummaryMarker) {
		o.res.SummaryRequests++
		o.res.SummaryTokens += int64(n)
		o.run++
	} else {
		if o.run > 0 {
			o.res.CallsPerCompaction = append(o.res.CallsPerCompaction, o.run)
			o.run = 0
		}
		o.res.Requests++
		o.checkOutputs(req)
		o.res.Tokens += int64(n)
		o.res.CachedTokens += int64(o.cached(req, fixed, sizes))
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
	res := o.res
	for _, so := range o.outputs {
		res.Outputs++
		res.OutputShares = append(res.OutputShares, so.share)
		if so.shortened {
			res.Shortened++
		}
		if so.noAddress {
			res.NoAddress++
		}
		if so.then {
			res.CutAfterWhole++
		}
	}
	return res
}
