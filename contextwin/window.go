package contextwin

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"
	"sync"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/tokens"
)

// DefaultModel is assumed for a model nobody described: small enough that
// an unknown local model is not overrun.
var DefaultModel = config.ModelSpec{Window: 32_768, MaxOutput: 8_192}

// Models describes a pinned model spec ("provider/model-id").
type Models func(spec string) config.ModelSpec

// DefaultConfig holds the window's thresholds, as shares of the input
// budget (the window less the response slack; config.Context documents
// the fields): drop outputs from 70 % of the budget, compact from 90 %
// down to 50 %, always keep the last three turns.
var DefaultConfig = config.Context{Drop: 0.70, Compact: 0.90, LowWater: 0.50, KeepTurns: 3}

// uncertainty is how far an estimated count may be off after correction;
// the proof before sending keeps that much of the budget free.
const uncertainty = 0.10

// Window assembles model requests from session logs. It is safe for
// concurrent use; it caches token counters and the counts of the fixed
// prefix, which change rarely.
type Window struct {
	cfg    config.Context
	models Models

	mu       sync.Mutex
	known    map[string]config.ModelSpec
	counters map[string]tokens.Counter
	fixed    map[[32]byte]int
	short    map[shortKey]int
}

// shortKey keys the counts of the short texts assembly makes on every
// call (pins, reminder, addresses), which seldom change.
type shortKey struct {
	counter string
	text    string
}

// countShort counts a text assembly renders anew on every call, through a
// bounded cache.
func (w *Window) countShort(c tokens.Counter, s string) int {
	if s == "" {
		return 0
	}
	k := shortKey{c.Name(), s}
	w.mu.Lock()
	n, ok := w.short[k]
	w.mu.Unlock()
	if ok {
		return n
	}
	n = c.Count(s)
	w.mu.Lock()
	if len(w.short) >= 50_000 {
		clear(w.short)
	}
	w.short[k] = n
	w.mu.Unlock()
	return n
}

// New returns a window with cfg (zero fields take DefaultConfig's values)
// that learns models from models (nil: DefaultModel for every spec).
func New(cfg config.Context, models Models) (*Window, error) {
	d := DefaultConfig
	if cfg.Drop == 0 {
		cfg.Drop = d.Drop
	}
	if cfg.Compact == 0 {
		cfg.Compact = d.Compact
	}
	if cfg.LowWater == 0 {
		cfg.LowWater = min(d.LowWater, cfg.Drop*5/7)
	}
	if cfg.KeepTurns == 0 {
		cfg.KeepTurns = d.KeepTurns
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if models == nil {
		models = func(string) config.ModelSpec { return DefaultModel }
	}
	return &Window{cfg: cfg, models: models, known: map[string]config.ModelSpec{}, counters: map[string]tokens.Counter{}, fixed: map[[32]byte]int{}, short: map[shortKey]int{}}, nil
}

// Config returns the window's configuration.
func (w *Window) Config() config.Context { return w.cfg }

// Model returns what the window knows of spec, with defaults filled in.
// The answer is kept for the life of the window: a model's window does not
// change while bridle runs.
func (w *Window) Model(spec string) config.ModelSpec {
	w.mu.Lock()
	m, ok := w.known[spec]
	w.mu.Unlock()
	if ok {
		return m
	}
	m = w.models(spec)
	if m.Window <= 0 {
		m.Window = DefaultModel.Window
	}
	if m.MaxOutput <= 0 || m.MaxOutput > m.Window/2 {
		m.MaxOutput = min(DefaultModel.MaxOutput, m.Window/4)
	}
	w.mu.Lock()
	w.known[spec] = m
	w.mu.Unlock()
	return m
}

// Counter returns the token counter for spec's tokenizer family.
func (w *Window) Counter(spec string) tokens.Counter {
	fam := w.Model(spec).Tokenizer
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.counters[fam]
	if !ok {
		c = tokens.For(fam)
		w.counters[fam] = c
	}
	return c
}

// budget is the arithmetic of one model's window.
type budget struct {
	window, reserve, input int
	drop, compact, low     int
	// perOutput caps one tool output, so that no single output can carry
	// the window from under the drop threshold past the compaction one.
	perOutput int
}

func (w *Window) budget(m config.ModelSpec) budget {
	reserve := w.cfg.Reserve
	if reserve == 0 {
		reserve = min(m.MaxOutput, m.Window/4)
	}
	reserve = min(reserve, m.Window/2)
	in := m.Window - reserve
	return budget{
		window: m.Window, reserve: reserve, input: in,
		drop:      int(w.cfg.Drop * float64(in)),
		compact:   int(w.cfg.Compact * float64(in)),
		low:       int(w.cfg.LowWater * float64(in)),
		perOutput: max(256, int((w.cfg.Compact-w.cfg.Drop)*float64(in))),
	}
}

// Overhead per message part: role markers and separators that every
// chat format adds around a piece of content.
const partOverhead = 4

// toolWrapper is what the API's wrapper around a tool's JSON adds
// ({"type":"function","function":…} in OpenAI's format).
const toolWrapper = 8

// toolJSON is a tool as the APIs carry it.
func toolJSON(t provider.Tool) string {
	b, _ := json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}{t.Name, t.Description, t.InputSchema})
	return string(b)
}

// CountEvent returns the tokens an event occupies when projected for spec's
// model: what the model reads, not the stored JSON. Events the model
// never sees count zero. The session stores the result at append.
func (w *Window) CountEvent(spec string, kind event.Kind, payload []byte) int {
	p, err := event.Decode(kind, payload)
	if err != nil {
		return (len(payload) + 3) / 4
	}
	return w.countFor(spec, p)
}

// countFor counts a payload for a model: its text by the model's counter,
// its images by the model's provider's formula.
func (w *Window) countFor(spec string, p event.Payload) int {
	return countPayload(w.Counter(spec), p) + imageTokens(w.Model(spec).Tokenizer, p)
}

// CountPayload is CountEvent for a payload the caller has decoded (or
// never encoded): the session counts what it is about to append without
// decoding the bytes it just encoded.
func (w *Window) CountPayload(spec string, p event.Payload) int {
	return w.countFor(spec, p)
}

// resultTokens is a tool result's count from its output's.
func resultTokens(output int) int { return output + 2*partOverhead }

func countPayload(c tokens.Counter, p event.Payload) int {
	switch v := p.(type) {
	case event.UserMessage:
		return c.Count(v.ModelText()) + partOverhead
	case event.AssistantMessage:
		n := c.Count(v.Text) + c.Count(v.Thinking) + partOverhead
		for _, call := range v.ToolCalls {
			n += c.Count(call.Name) + c.Count(string(call.Input)) + 2*partOverhead
		}
		return n
	case event.ToolResult:
		return resultTokens(c.Count(v.Output))
	case event.Interrupted:
		return c.Count(v.Text+InterruptedNote) + partOverhead
	case event.FileChanged:
		return c.Count(FileChangedNote(v)) + partOverhead
	case event.Compaction:
		return c.Count(SummaryText(v)) + partOverhead
	case event.ConstraintPinned:
		return c.Count(v.Text) + 2
	case event.DecisionRecorded:
		return c.Count(v.Text) + 2
	}
	return 0
}

// fixedCount counts the system blocks and the tool catalogue, cached by
// content: they are the same on almost every call.
func (w *Window) fixedCount(c tokens.Counter, system []provider.SystemBlock, tools []provider.Tool) int {
	// Keyed by the texts themselves, each prefixed with its length; no
	// formatting or encoding on the way (this runs on every assembly).
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	field(c.Name())
	for _, b := range system {
		field(b.Text)
	}
	for _, t := range tools {
		field(t.Name)
		field(t.Description)
		field(string(t.InputSchema))
	}
	var key [32]byte
	h.Sum(key[:0])
	w.mu.Lock()
	n, ok := w.fixed[key]
	w.mu.Unlock()
	if ok {
		return n
	}
	for _, b := range system {
		n += c.Count(b.Text) + partOverhead
	}
	// A tool reaches the model as JSON (name, description and schema,
	// quoted and escaped, in the API's wrapper): counted as such, not as
	// its bare texts, which fell short by a dozen tokens a tool.
	for _, t := range tools {
		n += c.Count(toolJSON(t)) + toolWrapper
	}
	w.mu.Lock()
	if len(w.fixed) > 64 { // a few models and modes; never grow without bound
		clear(w.fixed)
	}
	w.fixed[key] = n
	w.mu.Unlock()
	return n
}
