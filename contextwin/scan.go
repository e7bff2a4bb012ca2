package contextwin

import (
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/event"
)

// logState is what the log says about the window, read afresh for every
// assembly: the log is the state.
type logState struct {
	// first is the user's first request.
	first *event.Event
	pins  Pins
	// plan is the latest plan the model set (nil: none, or cleared).
	plan []event.PlanEntry
	// compaction is the latest one, at seq compactionSeq.
	compaction    *event.Compaction
	compactionSeq int64
	// pieces are the summaries of every compaction so far, in order; the
	// next compaction summarizes only what comes after the last one's
	// Through.
	pieces []event.SummaryPiece
	// dropped holds the tool results earlier assemblies replaced by an
	// address.
	dropped map[int64]bool
	// ratio corrects estimated counts: reported usage over estimate,
	// smoothed over the latest RatioCalls model calls; 0 while none of
	// them reported usage. measured says one did.
	ratio    float64
	measured bool
	// calls maps a tool result (by seq) to the call it answers, to
	// describe a dropped output. Ids are not enough: some models reuse
	// them from one message to the next.
	calls map[int64]event.ToolCall
	// stale holds the tool results that showed a file which changed on
	// disk since: they are the first to drop.
	stale map[int64]bool
}

// Pins are the constraints and decisions in force, in the order given.
type Pins struct {
	Constraints []string
	Decisions   []string
}

func (p *Pins) add(list *[]string, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	key := normalize(text)
	for _, have := range *list {
		if normalize(have) == key {
			return
		}
	}
	*list = append(*list, text)
}

func normalize(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.TrimRight(s, ".")), " "))
}

// Empty reports whether nothing is pinned.
func (p Pins) Empty() bool { return len(p.Constraints) == 0 && len(p.Decisions) == 0 }

// PinsOf returns the constraints and decisions a log holds: the user's
// commands, the model's remember calls and every compaction's fields.
func PinsOf(events []event.Event) Pins { return scan(events).pins }

func scan(events []event.Event) logState {
	sc := newScanner()
	for i := range events {
		sc.add(&events[i])
	}
	return sc.state()
}

// scanner reads a log into a logState one event at a time, so a Memo can
// read only what was appended since the last assembly.
type scanner struct {
	st      logState
	showed  map[string][]int64 // file → results that showed it
	lastRaw int
	// samples holds the latest RatioCalls model calls' reported input
	// over the raw count of the request before them (0: none reported),
	// in a ring; calls counts every call.
	samples [RatioCalls]float64
	calls   int
	asked   []event.ToolCall // the latest model message's calls
	// forgot is the seq through which forget dropped what the scanner
	// knew of tool results.
	forgot int64
}

func newScanner() *scanner {
	return &scanner{
		st:     logState{dropped: map[int64]bool{}, calls: map[int64]event.ToolCall{}, stale: map[int64]bool{}},
		showed: map[string][]int64{},
	}
}

// state is the log read so far. Its maps are the scanner's: read them,
// do not change them.
func (sc *scanner) state() logState {
	st := sc.st
	st.measured = st.ratio > 0
	st.ratio = clampRatio(st.ratio)
	return st
}

func (sc *scanner) add(e *event.Event) {
	st := &sc.st
	switch v := e.Payload.(type) {
	case event.UserMessage:
		if st.first == nil {
			// A copy: a pointer into the log would keep the whole slice it
			// came from.
			first := *e
			st.first = &first
		}
	case event.ConstraintPinned:
		st.pins.add(&st.pins.Constraints, v.Text)
	case event.DecisionRecorded:
		st.pins.add(&st.pins.Decisions, v.Text)
	case event.PlanUpdated:
		st.plan = v.Entries
	case event.Compaction:
		st.compaction, st.compactionSeq = &v, e.Seq
		sc.forget(v.Through)
		if len(v.Pieces) > 0 {
			st.pieces = append(st.pieces, v.Pieces...)
		} else {
			// An older compaction summarized everything up to Through.
			st.pieces = append(st.pieces[:0:0], pieceOf(v))
		}
		for _, c := range v.Constraints {
			st.pins.add(&st.pins.Constraints, c)
		}
		for _, d := range v.Decisions {
			st.pins.add(&st.pins.Decisions, d)
		}
	case event.ContextAssembled:
		for _, s := range v.Dropped {
			st.dropped[s] = true
		}
		sc.lastRaw = v.Raw
	case event.FileChanged:
		for _, seq := range sc.showed[v.Path] {
			st.stale[seq] = true
		}
		delete(sc.showed, v.Path)
	case event.ToolResult:
		for _, f := range v.Seen {
			sc.showed[f.Path] = append(sc.showed[f.Path], e.Seq)
		}
		for _, c := range sc.asked {
			if c.ID == v.CallID {
				st.calls[e.Seq] = c
				break
			}
		}
	case event.AssistantMessage:
		sc.asked = v.ToolCalls
		sc.usage(v.Usage.Reported())
	case *event.Stub:
		// Before the window: only what the usage correction reads.
		switch v.Of {
		case event.KindContextAssembled:
			sc.lastRaw = v.Raw
		case event.KindAssistantMessage:
			sc.asked = nil
			sc.usage(v.Reported)
		}
	}
}

// RatioCalls is how many of the latest model calls the usage correction
// follows. Each call weighs half the next, so the 64th back weighs 2^-64
// of the latest and those before it would change nothing a float64 holds:
// they are left out, and a session loaded from the store reads the usage
// of these calls alone, not of every call in its log.
const RatioCalls = 64

// usage reads a model call's reported input against the raw count of the
// request before it into the usage correction: the latest RatioCalls
// calls' samples, each weighing half the next.
func (sc *scanner) usage(reported int) {
	var sample float64
	if reported > 0 && sc.lastRaw > 0 {
		sample = float64(reported) / float64(sc.lastRaw)
	}
	sc.lastRaw = 0
	sc.samples[sc.calls%RatioCalls] = sample
	sc.calls++
	ratio := 0.0
	for i := max(0, sc.calls-RatioCalls); i < sc.calls; i++ {
		switch s := sc.samples[i%RatioCalls]; {
		case s == 0:
		case ratio == 0:
			ratio = s
		default:
			ratio = 0.5*ratio + 0.5*s
		}
	}
	sc.st.ratio = ratio
}

// forget drops what the scanner knows of the tool results through seq
// through, which a compaction has taken out of the window: the window
// only ever looks up the results it shows, and a long session would
// otherwise hold every call's input here. A plan for the next compaction
// reads the log itself (PlanCompaction).
func (sc *scanner) forget(through int64) {
	if through <= sc.forgot {
		return
	}
	sc.forgot = through
	st := &sc.st
	for _, m := range []map[int64]bool{st.dropped, st.stale} {
		for seq := range m {
			if seq <= through {
				delete(m, seq)
			}
		}
	}
	for seq := range st.calls {
		if seq <= through {
			delete(st.calls, seq)
		}
	}
	for path, seqs := range sc.showed {
		kept := slices.DeleteFunc(seqs, func(seq int64) bool { return seq <= through })
		if len(kept) == 0 {
			delete(sc.showed, path)
		} else {
			sc.showed[path] = kept
		}
	}
}

// clampRatio keeps a correction believable: a provider that reports
// nothing, or only part of the prompt (some local servers leave out the
// cached prefix), must not shrink the budget's view of the request.
func clampRatio(r float64) float64 {
	switch {
	case r == 0:
		return 1
	case r < 0.8:
		return 0.8
	case r > 3:
		return 3
	}
	return r
}

// projected reports whether the model sees e (a stub's kind, too).
func projected(e event.Event) bool {
	switch e.Kind() {
	case event.KindUserMessage, event.KindAssistantMessage, event.KindToolResult, event.KindInterrupted, event.KindFileChanged:
		return true
	}
	return false
}

// turnStarts returns the indexes in events where a turn starts. A turn is
// one exchange with the model: a prompt or the model's next message after
// tool results, with the tool results that answer it. Counting exchanges
// rather than prompts keeps "the last three turns" small in a long agentic
// loop that runs on one prompt.
func turnStarts(events []event.Event) []int {
	var out []int
	prevUser := false
	for i, e := range events {
		switch e.Payload.(type) {
		case event.UserMessage:
			out = append(out, i)
			prevUser = true
		case event.AssistantMessage, event.Interrupted:
			if !prevUser {
				out = append(out, i)
			}
			prevUser = false
		}
	}
	return out
}
