package contextwin

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/tokens"
)

// SummaryMarker starts the system prompt of every summary request, so a
// scripted model can tell them from the agent's own calls. It equals
// provider/scripted.SummaryRequest (a test keeps them equal).
const SummaryMarker = "bridle:summarize"

const summarySystem = SummaryMarker + `
You compact the log of a coding agent's session so the agent can go on
working without the events it cannot keep. You are given one stretch of
the session's original events; earlier stretches were summarised
separately, and the summaries are put together afterwards. Answer with
one JSON object about this stretch and nothing else:

{"goal": "what the user wants, in one or two sentences",
 "constraints": ["rules the user set that are not in the pinned list"],
 "decisions": ["choices made that later work must respect, not in the pinned list"],
 "done": ["what has been finished, with the files it touched"],
 "in_progress": ["what is half done and the next step"],
 "handles": ["paths, artifact ids, commands the agent will need again"],
 "summary": "anything else the agent must know, briefly"}

Be concrete: name files, functions, commands and artifact ids. Never
invent; leave a list empty when there is nothing for it.`

// outputInSummary caps each tool output shown to the summarizer: it needs
// the gist and the handle, not the whole listing. droppedInSummary caps
// an output the window had already replaced by its address.
const (
	outputInSummary  = 2_000
	droppedInSummary = 400
)

// CompactionPlan is a compaction about to run: the original events it
// replaces, rendered in chunks that each fit the summarizer's window.
type CompactionPlan struct {
	// Through is the last seq the summary replaces.
	Through int64
	// Events is how many projected events it replaces, Tokens what they
	// took of the window.
	Events, Tokens int

	model     string
	chunks    []string
	spans     [][2]int64
	pins      Pins
	first     string
	handles   []string
	maxTokens int
	// earlier are the pieces of the compactions before this one.
	earlier []event.SummaryPiece
}

// Chunks returns how many summarizer calls the plan needs.
func (p *CompactionPlan) Chunks() int { return len(p.chunks) }

// PlanCompaction plans the compaction of everything before the last kept
// turns, from the original events: never from an earlier summary. It
// returns nil when there is nothing old enough to summarise.
func (w *Window) PlanCompaction(in Input) (*CompactionPlan, error) {
	memo := in.memo()
	memo.mu.Lock()
	defer memo.mu.Unlock()
	l, err := w.layout(in, memo)
	if err != nil {
		return nil, err
	}
	b, c, st, ratio := l.b, l.c, l.st, l.ratio
	maxSummary := w.summaryTokens(b)
	keepFrom := l.keepFrom(w.cfg.KeepTurns, maxSummary)
	if keepFrom == 0 {
		return nil, nil
	}
	p := &CompactionPlan{model: in.Model, pins: st.pins, first: st.first.Payload.(event.UserMessage).Text(), maxTokens: maxSummary,
		earlier: st.pieces}
	// Each stretch of original events is summarized once: what the
	// pieces so far cover is not sent again.
	var covered int64
	if n := len(st.pieces); n > 0 {
		covered = st.pieces[n-1].Through
	}
	// Each chunk leaves room for the instructions, the pins and the
	// summary to come (no chunk carries another's summary).
	room := int(float64(b.input-c.Count(summarySystem)-maxSummary-c.Count(PinsText(st.pins))-c.Count(p.first)) / ratio * 0.9)
	room = max(room, 1_000)
	var cur strings.Builder
	curTokens, from := 0, int64(0)
	flush := func(through int64) {
		if cur.Len() > 0 {
			p.chunks = append(p.chunks, cur.String())
			p.spans = append(p.spans, [2]int64{from, through})
			cur.Reset()
			curTokens, from = 0, 0
		}
	}
	// The plan reads the log before the kept turns (the stubbed events
	// from the store): what came before the last plan's end is in the
	// fold that plan left, when it still holds.
	fold := memo.fold.from(c.Name(), b.perOutput, st.compactionThrough())
	dropped := map[int64]bool{} // by the assemblies since the fold's end
	err = in.each(fold.through, math.MaxInt64, []event.Kind{event.KindContextAssembled}, func(e event.Event) error {
		if a, ok := e.Payload.(event.ContextAssembled); ok {
			for _, seq := range a.Dropped {
				dropped[seq] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan a compaction: %w", err)
	}
	var last int64
	err = in.each(fold.through, keepFrom-1, originalKinds, func(e event.Event) error {
		fold.add(e, dropped[e.Seq], c, b.perOutput)
		if e.Seq <= covered {
			return nil
		}
		// An output the window already dropped is shown shorter: the
		// agent had stopped reading it, its address keeps the way back.
		limit := outputInSummary
		if dropped[e.Seq] {
			limit = droppedInSummary
		}
		text, n := renderForSummary(c, e, limit)
		if text == "" {
			return nil
		}
		if curTokens+n > room && cur.Len() > 0 {
			flush(last)
		}
		if from == 0 {
			from = e.Seq
		}
		cur.WriteString(text)
		curTokens += n
		last = e.Seq
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan a compaction: %w", err)
	}
	memo.fold = fold
	p.Through, p.Events, p.Tokens = fold.through, fold.events, fold.tokens
	flush(last)
	if len(p.chunks) == 0 {
		return nil, nil
	}
	p.handles = fold.handles.last(handlesKept)
	p.Tokens = int(math.Ceil(float64(p.Tokens) * ratio))
	return p, nil
}

// summaryTokens bounds a summary: a tenth of the input budget, within
// what one answer may hold.
func (w *Window) summaryTokens(b budget) int {
	return min(max(b.input/10, 512), 8_192, b.reserve)
}

// renderForSummary writes one original event for the summarizer, a tool
// output cut to limit tokens, and returns its cost in tokens (estimated
// from the stored count). A cut output names the id read_artifact returns
// it by (its artifact, else ResultID), so the summary can keep the way
// back once the window no longer holds the result.
func renderForSummary(c tokens.Counter, e event.Event, limit int) (string, int) {
	var s string
	n := e.Tokens
	switch v := e.Payload.(type) {
	case event.UserMessage:
		s = fmt.Sprintf("[#%d user]\n%s\n", e.Seq, v.ModelText())
	case event.AssistantMessage:
		s = fmt.Sprintf("[#%d assistant]\n%s\n", e.Seq, v.Text)
		for _, call := range v.ToolCalls {
			s += fmt.Sprintf("→ call %s %s\n", call.Name, clip(strings.Join(strings.Fields(string(call.Input)), " "), 300))
		}
	case event.ToolResult:
		head := fmt.Sprintf("[#%d result of %s, %s", e.Seq, v.Name, v.Status)
		if v.Artifact != "" {
			head += ", artifact " + v.Artifact
		}
		out := v.Output
		if n > limit {
			if v.Artifact == "" {
				head += ", whole as read_artifact " + ResultID(e.Seq)
			}
			out = ClipOutput(c, out, n, limit, v.Artifact)
			n = limit
		}
		s = head + "]\n" + out + "\n"
	case event.Interrupted:
		s = fmt.Sprintf("[#%d assistant, interrupted]\n%s\n", e.Seq, v.Text)
	case event.FileChanged:
		s = fmt.Sprintf("[#%d note] %s\n", e.Seq, FileChangedNote(v))
	case event.ConstraintPinned:
		s, n = fmt.Sprintf("[#%d constraint pinned by %s] %s\n", e.Seq, v.Source, v.Text), e.Tokens+8
	case event.DecisionRecorded:
		s, n = fmt.Sprintf("[#%d decision recorded by %s] %s\n", e.Seq, v.Source, v.Text), e.Tokens+8
	default:
		return "", 0
	}
	return s, n + 8
}

// Request returns the summarizer call for chunk k: the first request,
// the pins, and the original events of the chunk alone. No chunk sees
// another's summary, nor an earlier compaction's: each is summarized once
// and the pieces are composed (Result).
func (p *CompactionPlan) Request(k int) provider.Request {
	pins := PinsText(p.pins)
	if pins == "" {
		pins = "Nothing is pinned yet."
	}
	intro := "The user's first request, verbatim:\n" + p.first + "\n\n" + pins + "\n\n"
	text := fmt.Sprintf("%sEvents #%d–#%d of the session (part %d of %d of what is summarised now):\n\n%s\nSummarise them as the JSON object described.",
		intro, p.spans[k][0], p.spans[k][1], k+1, len(p.chunks), p.chunks[k])
	return provider.Request{
		Model:     p.model,
		System:    []provider.SystemBlock{{Text: summarySystem}},
		Messages:  []provider.Message{{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: text}}}},
		MaxTokens: p.maxTokens,
	}
}

// Result turns the summarizer's answers (answers[k] for chunk k) into the
// compaction event: a piece per chunk, composed with the pieces of the
// compactions before (compose). The required fields are filled whatever
// the model wrote: the goal falls back to the first request, and handles
// found in the events (paths, artifact ids, commands) are always kept.
func (p *CompactionPlan) Result(answers []string) event.Compaction {
	var pieces []event.SummaryPiece
	for k, text := range answers {
		if k >= len(p.spans) {
			break
		}
		c := parseSummary(text)
		pieces = append(pieces, event.SummaryPiece{From: p.spans[k][0], Through: p.spans[k][1], Goal: c.Goal,
			Constraints: c.Constraints, Decisions: c.Decisions, Done: c.Done, InProgress: c.InProgress, Handles: c.Handles, Summary: c.Summary})
	}
	if n := len(pieces); n > 0 {
		pieces[n-1].Through = p.Through // the events after the last one shown are covered too
	}
	all := append(slices.Clip(p.earlier), pieces...)
	c := compose(all, 4*p.maxTokens)
	c.Through, c.Pieces = p.Through, pieces
	if strings.TrimSpace(c.Goal) == "" {
		c.Goal = clip(strings.Join(strings.Fields(p.first), " "), 400)
	}
	c.Handles = union(c.Handles, p.handles)
	// Pins already in force are not repeated.
	c.Constraints = notPinned(c.Constraints, p.pins.Constraints)
	c.Decisions = notPinned(c.Decisions, p.pins.Decisions)
	return c
}

// compose puts summary pieces together, oldest first, without a model:
// the latest goal and work in progress, every constraint, decision, done
// item and handle once, and the pieces' summaries in order, the oldest
// left out first when they would not fit budgetChars/2 (done items
// beyond budgetChars/4 likewise). Nothing in it is summarized again.
func compose(pieces []event.SummaryPiece, budgetChars int) event.Compaction {
	var c event.Compaction
	var notes []string
	for _, p := range pieces {
		if strings.TrimSpace(p.Goal) != "" {
			c.Goal = p.Goal
		}
		if len(p.InProgress) > 0 {
			c.InProgress = p.InProgress
		}
		c.Constraints = union(c.Constraints, p.Constraints)
		c.Decisions = union(c.Decisions, p.Decisions)
		c.Done = union(c.Done, p.Done)
		c.Handles = union(c.Handles, p.Handles)
		if s := strings.TrimSpace(p.Summary); s != "" {
			notes = append(notes, fmt.Sprintf("(#%d–#%d) %s", p.From, p.Through, s))
		}
	}
	for len(notes) > 1 && len(strings.Join(notes, "\n")) > budgetChars/2 {
		notes = notes[1:]
	}
	c.Summary = clip(strings.Join(notes, "\n"), budgetChars/2)
	for len(c.Done) > 1 && len(strings.Join(c.Done, "; ")) > budgetChars/4 {
		c.Done = c.Done[1:]
	}
	return c
}

// union appends to list the items of more it does not hold yet (compared
// as normalize does), keeping the order.
func union(list, more []string) []string {
	have := make(map[string]bool, len(list))
	for _, it := range list {
		have[normalize(it)] = true
	}
	for _, it := range more {
		it = strings.TrimSpace(it)
		if k := normalize(it); it != "" && !have[k] {
			have[k] = true
			list = append(list, it)
		}
	}
	return list
}

// pieceOf is an older compaction (made before pieces were kept) as the
// one piece it was: a summary of everything through its Through.
func pieceOf(c event.Compaction) event.SummaryPiece {
	return event.SummaryPiece{From: 1, Through: c.Through, Goal: c.Goal, Constraints: c.Constraints, Decisions: c.Decisions,
		Done: c.Done, InProgress: c.InProgress, Handles: c.Handles, Summary: c.Summary}
}

func notPinned(items, pinned []string) []string {
	var out []string
	for _, it := range items {
		dup := false
		for _, p := range pinned {
			if normalize(p) == normalize(it) {
				dup = true
				break
			}
		}
		if !dup && strings.TrimSpace(it) != "" {
			out = append(out, strings.TrimSpace(it))
		}
	}
	return out
}

// parseSummary reads the summarizer's answer: the JSON object asked for,
// possibly in a code fence, or failing that "Goal:"-style sections, or
// failing that the whole text as the summary.
func parseSummary(text string) event.Compaction {
	var c event.Compaction
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i {
		var v struct {
			Goal        string   `json:"goal"`
			Constraints []string `json:"constraints"`
			Decisions   []string `json:"decisions"`
			Done        []string `json:"done"`
			InProgress  []string `json:"in_progress"`
			Handles     []string `json:"handles"`
			Summary     string   `json:"summary"`
		}
		if json.Unmarshal([]byte(text[i:j+1]), &v) == nil {
			return event.Compaction{Goal: v.Goal, Constraints: v.Constraints, Decisions: v.Decisions,
				Done: v.Done, InProgress: v.InProgress, Handles: v.Handles, Summary: v.Summary}
		}
	}
	var rest []string
	var list *[]string
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if m := sectionRE.FindStringSubmatch(t); m != nil {
			list = nil
			val := strings.TrimSpace(m[2])
			switch strings.ToLower(strings.ReplaceAll(m[1], " ", "_")) {
			case "goal":
				c.Goal = val
				continue
			case "constraints":
				list = &c.Constraints
			case "decisions":
				list = &c.Decisions
			case "done":
				list = &c.Done
			case "in_progress":
				list = &c.InProgress
			case "handles":
				list = &c.Handles
			}
			if val != "" {
				*list = append(*list, val)
			}
			continue
		}
		if list != nil && (strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ")) {
			*list = append(*list, strings.TrimSpace(t[2:]))
			continue
		}
		if t != "" {
			list = nil
			rest = append(rest, t)
		}
	}
	c.Summary = strings.Join(rest, "\n")
	return c
}

var sectionRE = regexp.MustCompile(`(?i)^(goal|constraints|decisions|done|in progress|in_progress|handles):\s*(.*)$`)

// Replacement says what a compaction stands for and what it did to the
// window: two different figures. The summary covers every original event
// from the first through Through (CoveredTokens, most of which had long
// left the window when an earlier compaction replaced them); the window
// shrank by Freed, from the request before the compaction to the one
// after it.
type Replacement struct {
	From, Through int64
	// Events is how many projected events (prompts, answers, tool
	// results) the summary stands for; CoveredTokens what they took as
	// originals.
	Events, CoveredTokens int
	// SummaryTokens is what the summary takes instead.
	SummaryTokens int
	// WindowBefore and WindowAfter are the tokens of the requests just
	// before and just after the compaction (0 when the log has none);
	// Freed is their difference.
	WindowBefore, WindowAfter, Freed int
}

// Replaced describes what the compaction at seq replaced, for `bridle log`
// and _bridle/events.
func Replaced(events []event.Event, seq int64) (Replacement, bool) {
	var c event.Compaction
	var r Replacement
	found := false
	for _, e := range events {
		if e.Seq == seq {
			c, found = e.Payload.(event.Compaction)
			r.SummaryTokens = e.Tokens
			break
		}
	}
	if !found {
		return r, false
	}
	r.Through = c.Through
	for _, e := range events {
		if e.Seq > c.Through {
			break
		}
		if projected(e) {
			if r.From == 0 {
				r.From = e.Seq
			}
			r.Events++
			r.CoveredTokens += e.Tokens
		}
	}
	for _, e := range events {
		a, ok := e.Payload.(event.ContextAssembled)
		switch {
		case !ok:
		case e.Seq < seq:
			r.WindowBefore = a.Used()
		case r.WindowAfter == 0:
			r.WindowAfter = a.Used()
		}
	}
	if c.WindowBefore > 0 {
		r.WindowBefore = c.WindowBefore // the request that called for it, never logged
	}
	if r.WindowBefore > 0 && r.WindowAfter > 0 {
		r.Freed = r.WindowBefore - r.WindowAfter
	}
	return r, true
}
