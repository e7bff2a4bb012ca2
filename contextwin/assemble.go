package contextwin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/tokens"
)

// Actions an assembly records in context_assembled.
const (
	ActionNone    = "none"
	ActionDrop    = "drop_outputs"
	ActionCompact = "compact"
	// ActionSqueeze: even the last turns did not fit, so their oldest
	// outputs were dropped too.
	ActionSqueeze = "squeeze"
)

// ErrTooBig is returned when not even the first request, the pins and the
// latest exchange fit the model's window.
var ErrTooBig = errors.New("the request does not fit the model's context window")

// TooBigError is Assemble's ErrTooBig with its numbers, all in tokens as
// the window counts them (corrected by Ratio).
type TooBigError struct {
	Spec string
	// Needs is what the request takes after every measure; Limit what the
	// window allows for it (the input budget, less the estimate's margin);
	// Reserve what is kept for the answer.
	Needs, Limit, Reserve int
	// TaskPins (first request, pins, reminder), History and Outputs are
	// the parts of Needs that can be told apart (the rest is the fixed
	// prefix).
	TaskPins, History, Outputs int
	// Ratio is the usage correction applied to raw counts.
	Ratio float64
}

func (e *TooBigError) Error() string {
	return fmt.Sprintf("%v: it needs %d tokens and %s's window allows %d with %d kept for the answer "+
		"(first request and pins %d, history %d, tool outputs %d): shorten the prompt or the pins, or switch to a model with a larger window",
		ErrTooBig, e.Needs, e.Spec, e.Limit, e.Reserve, e.TaskPins, e.History, e.Outputs)
}

func (e *TooBigError) Unwrap() error { return ErrTooBig }

// Input is a session at the moment of a model call.
type Input struct {
	// Spec is the session's pinned model, provider/model-id.
	Spec string
	// Model is the model id the request names.
	Model string
	// System is the system prompt; Project the project's instructions
	// (AGENTS.md, .bridle/settings.json), empty when there are none.
	System  string
	Project string
	Tools   []provider.Tool
	// Events is the log. A session keeps the events before its window
	// starts (its latest compaction's Through) as stubs (*event.Stub):
	// the window never shows them, and the scans of the whole log read
	// what the stubs keep.
	Events []event.Event
	// Stored reads the log whole, for what needs the payloads of the
	// stubbed events (a compaction's plan): it calls fn with each event
	// of Events with seq in (after, through], in order, the stubs of
	// kinds read from the store. Nil when Events holds no stub.
	Stored func(after, through int64, kinds []event.Kind, fn func(event.Event) error) error
	// Memo carries what the last assembly of this session read (see
	// Memo); nil reads the whole log.
	Memo *Memo
	// SeedRatio is the correction of estimated counts to start from until
	// this session's provider reports usage: the last one measured for the
	// same model in another session (0: none).
	SeedRatio float64
}

func (in Input) memo() *Memo {
	if in.Memo == nil {
		return &Memo{}
	}
	return in.Memo
}

// Assembly is one request and what it takes of the window.
type Assembly struct {
	Request provider.Request
	// Occupancy is the context_assembled event to append.
	Occupancy event.ContextAssembled
	// Compact says the window is past the compaction threshold even after
	// dropping old outputs, and there are turns older than the kept ones:
	// compact (see PlanCompaction), then assemble again. Request is still
	// valid (it fits), should compaction fail.
	Compact bool
}

// Used returns the tokens the request takes.
func (a Assembly) Used() int { return a.Occupancy.Used() }

// item is one tool result in the window and what each way of showing it
// costs.
type item struct {
	seq       int64
	full      int // tokens as shown now: whole, or clipped to the per-output cap
	address   int // tokens once dropped; 0 until needed
	result    event.Event
	protected bool
	dropped   bool
}

// Assemble builds the request for in from the log, in the order
// docs/architecture.md §5 gives, applies the thresholds and proves that the request and the
// response slack fit the window before returning it.
func (w *Window) Assemble(in Input) (Assembly, error) {
	memo := in.memo()
	memo.mu.Lock()
	defer memo.mu.Unlock()
	l, err := w.layout(in, memo)
	if err != nil {
		return Assembly{}, err
	}
	m, b, c, st, corr := l.model, l.b, l.c, l.st, l.corr
	fixed, taskPins, history := l.fixed, l.taskPins, l.history
	system := l.system
	// The outputs' cost as the log left them comes with the Memo's
	// projection; the items that may drop are looked at only when a
	// threshold or the window's limit is reached.
	outputs := l.view.outputs
	used := func() int { return corr(fixed + taskPins + history + outputs) }
	limit := b.input
	if !c.Exact() {
		limit = int(float64(b.input) / (1 + uncertainty))
	}
	var items []item
	var order []int
	if used() >= b.drop || used() > limit {
		protectFrom := l.protectFrom(w.cfg.KeepTurns)
		items = make([]item, 0, len(l.shown))
		outputs = 0
		for _, e := range l.shown {
			it := item{seq: e.Seq, full: min(e.Tokens, l.per), protected: e.Seq >= protectFrom, dropped: st.dropped[e.Seq], result: e}
			if it.dropped {
				it.address = memo.addressCost(w, c, e, st.calls[e.Seq])
				outputs += it.address
			} else {
				outputs += it.full
			}
			items = append(items, it)
		}
		// Outputs showing a file that changed on disk since go first,
		// then the rest, oldest first.
		order = make([]int, 0, len(items))
		for i, it := range items {
			if st.stale[it.seq] {
				order = append(order, i)
			}
		}
		for i, it := range items {
			if !st.stale[it.seq] {
				order = append(order, i)
			}
		}
	}
	action := ActionNone
	var newly []int64
	// An address is rendered and counted only for an output that may go.
	addr := func(it *item) int {
		if it.address == 0 {
			it.address = memo.addressCost(w, c, it.result, st.calls[it.seq])
		}
		return it.address
	}
	drop := func(it *item) {
		it.dropped = true
		outputs += it.address - it.full
		newly = append(newly, it.seq)
	}
	// From the first threshold: old outputs go, in one batch down to the
	// low-water mark.
	if used() >= b.drop {
		for _, i := range order {
			if used() <= b.low {
				break
			}
			if it := &items[i]; !it.dropped && !it.protected && it.full > addr(it) {
				drop(it)
			}
		}
		if len(newly) > 0 {
			action = ActionDrop
		}
	}
	// From the second: compaction, if there is anything old to summarise.
	compact := used() >= b.compact && l.keepFrom(w.cfg.KeepTurns, w.summaryTokens(b)) > 0
	// The proof: the request, with the margin an estimate needs, and the
	// response slack fit the window. Past it, the kept turns' outputs go
	// too, oldest first.
	if used() > limit {
		for _, i := range order {
			if used() <= min(limit, b.low) {
				break
			}
			if it := &items[i]; !it.dropped && it.full > addr(it) {
				drop(it)
				action = ActionSqueeze
			}
		}
	}
	if u := used(); u > limit {
		return Assembly{}, &TooBigError{Spec: in.Spec, Needs: u, Limit: limit, Reserve: b.reserve,
			TaskPins: corr(taskPins), History: corr(history), Outputs: corr(outputs), Ratio: l.ratio}
	}

	// Build the request the numbers describe.
	dropped := map[int64]bool{}
	for _, it := range items {
		if it.dropped {
			dropped[it.seq] = true
		}
	}
	msgs, head := l.messages(dropped, len(newly) > 0)
	stable := prefixHash(system, in.Tools, head)

	occ := event.ContextAssembled{
		Window:      m.Window,
		FixedPrefix: corr(fixed),
		TaskPins:    corr(taskPins),
		History:     corr(history),
		ToolOutputs: corr(outputs),
		Action:      action,
		PrefixHash:  stable,
		Dropped:     newly,
		Raw:         fixed + taskPins + history + outputs,
		Ratio:       math.Round(l.ratio*1000) / 1000,
		Counter:     c.Name(),
	}
	occ.Slack = m.Window - occ.Used()
	return Assembly{
		Request: provider.Request{
			Model: in.Model, System: system, Tools: in.Tools, CacheTools: len(in.Tools) > 0,
			Messages: msgs, MaxTokens: b.reserve,
		},
		Occupancy: occ,
		Compact:   compact,
	}, nil
}

// prefixHash identifies the stable prefix: the system blocks, the tool
// catalogue, the first request, the pins and the summary. Two requests
// with the same hash share those bytes, so a provider's prompt cache can
// serve them.
func prefixHash(system []provider.SystemBlock, tools []provider.Tool, head []provider.Part) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	enc.Encode(system)
	enc.Encode(tools)
	enc.Encode(head)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Limits describes spec's budget: for the session's source-side cut and
// for tests.
type Limits struct {
	Window, Reserve, Input int
	// Drop, Compact and LowWater are the thresholds in tokens.
	Drop, Compact, LowWater int
	// PerOutput is the most one tool output may take of the window.
	PerOutput int
}

// Limits returns spec's budget in tokens.
func (w *Window) Limits(spec string) Limits {
	b := w.budget(w.Model(spec))
	return Limits{Window: b.window, Reserve: b.reserve, Input: b.input, Drop: b.drop, Compact: b.compact, LowWater: b.low, PerOutput: b.perOutput}
}

// CutOutput is the cut at the source: before a tool result is appended,
// an output larger than the per-output cap is cut to its head and tail,
// so one output can never carry the window past both thresholds at once.
// It returns the output unchanged when it fits, and the result's token
// count as CountPayload gives it: the output is counted once, here, and
// the session records that count rather than counting it again.
//
// ratio is the session's correction of estimated counts (Memo.Ratio): the
// cap applies to the corrected count, so an output is cut to fit it as
// the provider counts. keep, when set, keeps an output that has no
// artifact whole before it is cut, and returns the artifact id it is
// kept as ("" if it could not be): the cut names it, as it names an
// artifact the tool made.
func (w *Window) CutOutput(spec string, r event.ToolResult, ratio float64, keep func(whole string) string) (event.ToolResult, int) {
	c := w.Counter(spec)
	if c.Exact() {
		ratio = 1
	}
	limit := rawPerOutput(w.budget(w.Model(spec)).perOutput, ratio, !c.Exact())
	have := -1
	// An output far over the cap on any count is cut on its estimate:
	// counting it exactly only to learn that would cost more than the
	// cut. Under that, the count decides.
	if len(r.Output) > 16*limit {
		if est := (tokens.Estimate{}).Count(r.Output); est > 2*limit {
			have = est
		}
	}
	if have < 0 {
		have = c.Count(r.Output)
		if have <= limit {
			return r, resultTokens(have)
		}
	}
	if r.Lines == 0 {
		r.Lines = countLines(r.Output)
	}
	if r.Bytes == 0 {
		r.Bytes = len(r.Output)
	}
	if r.Artifact == "" && keep != nil {
		r.Artifact = keep(r.Output)
	}
	out, n := clipOutput(c, r.Output, have, limit, r.Artifact)
	if n < 0 {
		n = c.Count(out)
	}
	r.Output = out
	return r, resultTokens(n)
}

func countLines(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
		}
	}
	if len(s) > 0 && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// messages projects the window: the first request with the pins and the
// summary, the turns after it with dropped outputs replaced by their
// addresses and oversized ones cut, and the reminder at the end. It
// returns the messages and the parts of the first one (the stable head).
// The turns come from the Memo's projection unless this assembly dropped
// outputs (fresh), which changes how earlier results render.
func (l *layout) messages(dropped map[int64]bool, fresh bool) ([]provider.Message, []provider.Part) {
	st := l.st
	head := userParts(st.first.Payload.(event.UserMessage))
	if l.pinsText != "" {
		head = append(head, provider.Part{Kind: provider.PartText, Text: l.pinsText})
	}
	if st.compaction != nil {
		head = append(head, provider.Part{Kind: provider.PartText, Text: SummaryText(*st.compaction)})
	}
	var body []provider.Message
	var pending []string
	if fresh || l.view == nil {
		p := projector{output: func(e event.Event, r event.ToolResult) string {
			if dropped[e.Seq] {
				return Address(r, e.Seq, st.calls[e.Seq], e.Tokens)
			}
			return ClipOutput(l.c, r.Output, e.Tokens, l.per, OutputID(r, e.Seq))
		}}
		for _, e := range l.win {
			p.add(e)
		}
		body, pending = p.msgs, p.pending
	} else {
		body, pending = l.view.p.msgs, slices.Clone(l.view.p.pending)
	}
	first := provider.Message{Role: provider.RoleUser, Parts: head, Cache: true}
	merged := len(body) > 0 && body[0].Role == provider.RoleUser
	if merged {
		// Roles alternate: a user message right after the head joins it.
		first.Parts = append(slices.Clip(head), body[0].Parts...)
	}
	var msgs []provider.Message
	if fresh || l.view == nil {
		if merged {
			body = body[1:]
		}
		msgs = make([]provider.Message, 0, len(body)+len(pending)+2)
		msgs = append(append(msgs, first), body...)
	} else {
		msgs = l.view.request(first, merged)
	}
	if n := len(msgs); n > 0 {
		// Its parts may be the Memo's: appending must copy them.
		msgs[n-1].Parts = slices.Clip(msgs[n-1].Parts)
	}
	closing := projector{msgs: msgs, pending: pending}
	closing.closePending()
	msgs = closing.msgs
	if l.reminder != "" {
		part := provider.Part{Kind: provider.PartText, Text: l.reminder}
		if last := &msgs[len(msgs)-1]; last.Role == provider.RoleUser {
			last.Parts = append(slices.Clip(last.Parts), part)
		} else {
			msgs = append(msgs, provider.Message{Role: provider.RoleUser, Parts: []provider.Part{part}})
		}
	}
	// The history's breakpoint goes on the last model message: what comes
	// after it (new results, the reminder) changes on every call.
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role == provider.RoleAssistant {
			msgs[i].Cache = true
			if l.view != nil && !fresh {
				l.view.cached = i
			}
			break
		}
	}
	if l.view != nil && !fresh {
		l.view.out = msgs
	}
	return msgs, head
}
