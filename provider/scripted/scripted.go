// Package scripted is a deterministic, offline model: it plays a scenario
// file so that the demo and the tests behave the same on every run, with no
// key and no network.
//
// Which step of the scenario answers a request is derived from the request
// alone (how many prompts it holds, how many model replies follow the last
// prompt), never from state in the provider. A restarted bridle therefore
// picks up the scenario exactly where the log says the session stopped.
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/tokens"
)

// Scenario is the content of a scenario file.
type Scenario struct {
	Name string `json:"name"`
	// Turns answer the user's prompts in order. A turn with Match answers
	// the first prompt whose text contains it instead.
	Turns []Turn `json:"turns"`
	// Summaries answer compaction requests, in order.
	Summaries []Call `json:"summaries,omitempty"`
	// Sequential plays the turns' calls one per request, in order, and
	// the summaries likewise, whatever the request holds. Long sessions
	// whose history is compacted need it: their requests no longer show
	// how many prompts came before. Unlike the default, it is not
	// restart-safe: a new process starts from the first call again.
	Sequential bool `json:"sequential,omitempty"`
	// Model describes the scripted model's window, so tests can fill it
	// quickly. Zero fields take the defaults.
	Model config.ModelSpec `json:"model,omitempty"`
	// UsageRatio, when set, makes the model report each request's input
	// as this multiple of the estimate of its text (tokens.Estimate, what
	// bridle counts for a model it cannot count exactly): a provider whose
	// tokenizer finds more tokens than the estimate. A call's own usage
	// still wins.
	UsageRatio float64 `json:"usage_ratio,omitempty"`
}

// Turn is the model's side of one prompt: one Call per model request.
type Turn struct {
	Match string `json:"match,omitempty"`
	Calls []Call `json:"calls"`
}

// Call is one model response.
type Call struct {
	Thinking string `json:"thinking,omitempty"`
	// Text is streamed in chunks: a list is sent item by item, a string word
	// by word.
	Text      Chunks     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Stop defaults to tool_use when there are tool calls, end_turn otherwise.
	Stop provider.StopReason `json:"stop,omitempty"`
	// DelayMS is waited before each chunk, so tests can cancel mid-stream.
	DelayMS int             `json:"delay_ms,omitempty"`
	Usage   *provider.Usage `json:"usage,omitempty"`
	// Fail makes the call fail after the given number of text chunks.
	Fail *Failure `json:"fail,omitempty"`
}

// ToolCall is a tool call the scripted model makes.
type ToolCall struct {
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Failure describes a scripted provider error.
type Failure struct {
	AfterChunks int                `json:"after_chunks"`
	Kind        provider.ErrorKind `json:"kind"`
	Status      int                `json:"status,omitempty"`
	Message     string             `json:"message"`
}

// Chunks is text to stream, written in a scenario as a string or a list.
type Chunks []string

// UnmarshalJSON accepts a string (split after each space) or a list.
func (c *Chunks) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = splitWords(s)
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("text must be a string or a list of strings: %w", err)
	}
	*c = list
	return nil
}

func splitWords(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// Load reads a scenario. name is looked up in scenarios (as NAME.json) and,
// failing that, as a file path.
func Load(scenarios fs.FS, name string) (*Scenario, error) {
	var data []byte
	var err error
	if scenarios != nil {
		data, err = fs.ReadFile(scenarios, name+".json")
	}
	if scenarios == nil || err != nil {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("scripted scenario %q: no such embedded scenario or file: %w", name, err)
	}
	var sc Scenario
	if err := json.Unmarshal(data, &sc); err != nil {
		return nil, fmt.Errorf("scripted scenario %q is not valid: %w", name, err)
	}
	return &sc, nil
}

// Provider plays one scenario.
type Provider struct {
	sc *Scenario

	mu              sync.Mutex
	played, summary int // sequential mode: calls answered so far
}

// New returns a provider that plays sc.
func New(sc *Scenario) *Provider { return &Provider{sc: sc} }

// Name implements provider.Provider.
func (p *Provider) Name() string { return "scripted" }

// Stream implements provider.Provider.
func (p *Provider) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	call := p.pick(req)
	if p.sc.UsageRatio > 0 && call.Usage == nil {
		call.Usage = &provider.Usage{InputTokens: int(p.sc.UsageRatio * float64(estimate(req))), OutputTokens: len(call.Text) + 4*len(call.ToolCalls)}
	}
	return func(yield func(provider.Delta, error) bool) {
		play(ctx, call, yield)
	}
}

// estimate is the estimated token count of everything a request says.
func estimate(req provider.Request) int {
	var c tokens.Estimate
	n := 0
	for _, s := range req.System {
		n += c.Count(s.Text)
	}
	for _, t := range req.Tools {
		n += c.Count(t.Name) + c.Count(t.Description) + c.Count(string(t.InputSchema))
	}
	for _, m := range req.Messages {
		for _, part := range m.Parts {
			n += c.Count(part.Text) + c.Count(string(part.Input)) + c.Count(part.ToolName)
		}
	}
	return n
}

// SummaryRequest marks a request as a compaction summary; the context
// window sets it in the request's first system block.
const SummaryRequest = "bridle:summarize"

func (p *Provider) pick(req provider.Request) Call {
	isSummary := len(req.System) > 0 && strings.HasPrefix(req.System[0].Text, SummaryRequest)
	if p.sc.Sequential {
		return p.next(isSummary)
	}
	if isSummary {
		n := 0
		for _, m := range req.Messages {
			if m.Role == provider.RoleAssistant {
				n++
			}
		}
		if n < len(p.sc.Summaries) {
			return p.sc.Summaries[n]
		}
		return Call{Text: Chunks{"Goal: (scripted summary)"}}
	}
	prompts, replies, last := 0, 0, ""
	for _, m := range req.Messages {
		switch {
		case m.Role == provider.RoleUser && isPrompt(m):
			prompts++
			replies = 0
			last = m.Text()
		case m.Role == provider.RoleAssistant:
			replies++
		}
	}
	turn, ok := p.turn(prompts-1, last)
	if !ok || replies >= len(turn.Calls) {
		return Call{Text: Chunks{"(The scripted scenario has nothing more to say.)"}}
	}
	return turn.Calls[replies]
}

// next plays the next call in sequential mode.
func (p *Provider) next(summary bool) Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	if summary {
		p.summary++
		if p.summary <= len(p.sc.Summaries) {
			return p.sc.Summaries[p.summary-1]
		}
		return Call{Text: Chunks{"Goal: (scripted summary)"}}
	}
	n := p.played
	p.played++
	for _, t := range p.sc.Turns {
		if n < len(t.Calls) {
			return t.Calls[n]
		}
		n -= len(t.Calls)
	}
	return Call{Text: Chunks{"(The scripted scenario has nothing more to say.)"}}
}

func (p *Provider) turn(index int, prompt string) (Turn, bool) {
	for _, t := range p.sc.Turns {
		if t.Match != "" && strings.Contains(prompt, t.Match) {
			return t, true
		}
	}
	if index < 0 || index >= len(p.sc.Turns) || p.sc.Turns[index].Match != "" {
		return Turn{}, false
	}
	return p.sc.Turns[index], true
}

// ReminderPrefix starts the reminder of the constraints the context window
// ends each request with; it is not a prompt.
const ReminderPrefix = "(Reminder: "

// isPrompt tells a user's prompt from a message carrying only tool results
// (and perhaps the context window's reminder).
func isPrompt(m provider.Message) bool {
	for _, part := range m.Parts {
		if part.Kind == provider.PartText && !strings.HasPrefix(part.Text, ReminderPrefix) {
			return true
		}
	}
	return false
}

func play(ctx context.Context, c Call, yield func(provider.Delta, error) bool) {
	wait := func() bool {
		if c.DelayMS <= 0 {
			return ctx.Err() == nil
		}
		t := time.NewTimer(time.Duration(c.DelayMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	fail := func(err error) { yield(provider.Delta{}, err) }
	cancelled := func() { fail(ctx.Err()) }

	if c.Thinking != "" {
		if !wait() {
			cancelled()
			return
		}
		if !yield(provider.Delta{Kind: provider.DeltaThinking, Text: c.Thinking, Signature: "scripted"}, nil) {
			return
		}
	}
	for i, chunk := range c.Text {
		if c.Fail != nil && i == c.Fail.AfterChunks {
			fail(c.Fail.err(i > 0))
			return
		}
		if !wait() {
			cancelled()
			return
		}
		if !yield(provider.Delta{Kind: provider.DeltaText, Text: chunk}, nil) {
			return
		}
	}
	if c.Fail != nil && c.Fail.AfterChunks >= len(c.Text) {
		fail(c.Fail.err(len(c.Text) > 0))
		return
	}
	for i, tc := range c.ToolCalls {
		if !wait() {
			cancelled()
			return
		}
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("toolu_scripted_%d", i)
		}
		args := string(tc.Input)
		if args == "" {
			args = "{}"
		}
		// Split the arguments as real APIs do, so consumers must reassemble.
		half := len(args) / 2
		for _, d := range []provider.Delta{
			{Kind: provider.DeltaToolStart, Index: i, ToolCallID: id, ToolName: tc.Name},
			{Kind: provider.DeltaToolArgs, Index: i, Text: args[:half]},
			{Kind: provider.DeltaToolArgs, Index: i, Text: args[half:]},
			{Kind: provider.DeltaToolEnd, Index: i},
		} {
			if !yield(d, nil) {
				return
			}
		}
	}
	usage := provider.Usage{OutputTokens: len(c.Text) + 4*len(c.ToolCalls)}
	if c.Usage != nil {
		usage = *c.Usage
	}
	stop := c.Stop
	if stop == "" {
		stop = provider.StopEndTurn
		if len(c.ToolCalls) > 0 {
			stop = provider.StopToolUse
		}
	}
	if yield(provider.Delta{Kind: provider.DeltaUsage, Usage: usage}, nil) {
		yield(provider.Delta{Kind: provider.DeltaStop, StopReason: stop}, nil)
	}
}

func (f *Failure) err(partial bool) error {
	kind := f.Kind
	if kind == "" {
		kind = provider.ErrServer
	}
	return &provider.Error{
		Provider:  "scripted",
		Kind:      kind,
		Status:    f.Status,
		Message:   f.Message,
		Retryable: !partial && (kind == provider.ErrOverloaded || kind == provider.ErrRateLimited || kind == provider.ErrServer),
		Partial:   partial,
		Err:       errors.New(f.Message),
	}
}
