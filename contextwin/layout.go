package contextwin

import (
	"fmt"
	"math"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/tokens"
)

// layout is a session's window before any decision: the blocks in order
// and what each costs, in raw (uncorrected) tokens.
type layout struct {
	w     *Window
	model config.ModelSpec
	b     budget
	c     tokens.Counter
	st    logState
	ratio float64
	// per is the per-output cap in raw counts: the budget's cap is in
	// corrected tokens, so with counts the provider finds 1.3× bigger a
	// raw output may take only cap/1.3.
	per int

	system             []provider.SystemBlock
	pinsText, reminder string
	// fixed, taskPins and history (without tool outputs) are raw counts.
	fixed, taskPins, history int
	// win holds the events after the latest summary (or the first
	// request); starts indexes its turns.
	win    []event.Event
	starts []int
	// shown are the tool results the projection shows, in order.
	shown []event.Event
	// view is the Memo's projection of win.
	view *memoView
}

// layout reads in's log through m (the log state and the window's
// projection, brought up to date with the events appended since m last
// read), so its cost follows what changed, not the log's length.
func (w *Window) layout(in Input, m *Memo) (*layout, error) {
	l := &layout{w: w, model: w.Model(in.Spec), c: w.Counter(in.Spec), st: m.read(in.Events)}
	l.b = w.budget(l.model)
	if l.st.first == nil {
		return nil, fmt.Errorf("assemble a request: the log holds no prompt yet")
	}
	l.ratio = l.st.ratio
	if !l.st.measured && in.SeedRatio > 0 {
		l.ratio = clampRatio(in.SeedRatio)
	}
	if l.c.Exact() {
		l.ratio = 1
	}
	l.per = rawPerOutput(l.b.perOutput, l.ratio, !l.c.Exact())
	// 1–3: the fixed prefix.
	l.system = []provider.SystemBlock{{Text: in.System}}
	if in.Project != "" {
		l.system = append(l.system, provider.SystemBlock{Text: "Project instructions:\n" + in.Project})
	}
	l.system[len(l.system)-1].Cache = true
	l.fixed = w.fixedCount(l.c, l.system, in.Tools)
	// 4, 5, 8: the task, the pins and the tail (the constraints' reminder
	// and the current plan).
	l.pinsText, l.reminder = PinsText(l.st.pins), tailText(ReminderText(l.st.pins), PlanText(l.st.plan))
	l.taskPins = l.st.first.Tokens
	for _, t := range []string{l.pinsText, l.reminder} {
		if t != "" { // each is a part of its own
			l.taskPins += w.countShort(l.c, t) + partOverhead
		}
	}
	// 6, 7: the latest summary, the turns after it.
	cut := l.st.first.Seq
	if l.st.compaction != nil {
		cut = max(cut, l.st.compaction.Through)
		l.history += countPayload(l.c, *l.st.compaction)
	}
	v := m.project(w, in.Spec, l.c, l.per, cut, in.Events)
	l.view = v
	if v.from < len(in.Events) {
		l.win = in.Events[v.from:]
	}
	l.shown = v.p.shown
	// The calls still pending are answered as cancelled in the request.
	synthetic := v.p.synthetic + len(v.p.pending)
	l.history += synthetic*(l.c.Count(CancelledResult)+2*partOverhead) + v.history
	l.starts = v.starts
	return l, nil
}

func (l *layout) corr(n int) int { return int(math.Ceil(float64(n) * l.ratio)) }

// outputCost is what a tool result takes as shown now.
func (l *layout) outputCost(e event.Event) int {
	if l.st.dropped[e.Seq] {
		r := e.Payload.(event.ToolResult)
		return l.w.countShort(l.c, Address(r, e.Seq, l.st.calls[e.Seq], e.Tokens)) + 2*partOverhead
	}
	return min(e.Tokens, l.per)
}

// rawPerOutput is the per-output cap for raw counts corrected by ratio.
// The ratio is rounded up to a step of ratioStep first: the smoothed
// ratio moves on every reported usage, and a cap that moved with it would
// re-clip the outputs already shown (the request's prefix, which the
// provider caches, would change) and make the Memo project the window
// again on every model call. Rounded up, the cap is never looser.
//
// Estimated counts are corrected by the session's ratio, a mean over
// whole requests; one text's own can be higher (the estimate's error
// differs from one kind of text to another, and a request's ratio is
// diluted by its structure), so an estimated output is capped with
// estimateSlack to spare.
func rawPerOutput(perOutput int, ratio float64, estimated bool) int {
	if estimated {
		ratio *= estimateSlack
	}
	if ratio <= 1 {
		return perOutput
	}
	ratio = math.Ceil(ratio/ratioStep-1e-9) * ratioStep
	return int(float64(perOutput) / ratio)
}

// ratioStep is how far the count correction must move before the
// per-output cap follows it.
const ratioStep = 0.05

// estimateSlack is how much more than the session's correction says an
// estimated output is allowed for: the estimate's worst file of the
// corpus it was fitted on is 19 % off o200k_base (TestEstimateTracksO200k),
// and one text of one kind among a session's others was up to 17.5 % over
// the session's correction in the fidelity benchmark (outputs up to 23.5 %
// of the input budget before).
const estimateSlack = 1.2

// protectFrom is the first seq of the last keep turns: their outputs are
// not dropped under the thresholds.
func (l *layout) protectFrom(keep int) int64 {
	if n := len(l.starts); n > keep {
		return l.win[l.starts[n-keep]].Seq
	}
	return math.MinInt64
}

// keepFrom is the first seq a compaction keeps: the last keep turns, or
// fewer when they would leave the window above the low-water mark after
// compacting (at least the last turn is always kept). It returns 0 when
// there is nothing before it to compact.
func (l *layout) keepFrom(keep, summary int) int64 {
	if len(l.starts) < 2 {
		return 0
	}
	room := float64(l.b.low)/l.ratio - float64(l.fixed+l.taskPins+summary)
	pending := map[int64]bool{}
	for _, e := range l.shown {
		pending[e.Seq] = true
	}
	cost := func(from, to int) int { // turn events win[from:to]
		n := 0
		for _, e := range l.win[from:to] {
			switch {
			case pending[e.Seq]:
				n += l.outputCost(e)
			case projected(e) && e.Kind() != event.KindToolResult:
				n += e.Tokens
			}
		}
		return n
	}
	kept, acc := 0, 0
	i := len(l.starts)
	for i > 1 && kept < keep {
		end := len(l.win)
		if i < len(l.starts) {
			end = l.starts[i]
		}
		n := cost(l.starts[i-1], end)
		if kept > 0 && float64(acc+n) > room {
			break
		}
		acc += n
		kept++
		i--
	}
	return l.win[l.starts[i]].Seq
}
