package contextwin

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/tokens"
)

// planFold is what a compaction's plan reads of the log before the kept
// turns, from its start: the originals it stands for, what they took of
// the window, the handles found in them. A session keeps the events
// before its window's start as stubs, and reading them again from the
// store for every plan would make a long session's compactions cost its
// whole log each time: the Memo keeps the fold of the last plan, and the
// next plan folds only what came after it. It holds while nothing can
// change what it counted: the log before its end left the window (a
// compaction through it or later was recorded, so no assembly drops those
// outputs any more), and outputs are counted as they were.
type planFold struct {
	// through is the last seq folded.
	through int64
	// counter and per are what the costs were counted with.
	counter string
	per     int
	// events are the projected events folded, tokens what they took of
	// the window (a dropped output its address).
	events, tokens int
	handles        handleList
	asked          asker
}

// from returns a copy of the fold to go on from: f when it holds for a
// plan counting with counter and per in a log whose window starts after
// start, else an empty one (the plan reads the log from its start).
func (f *planFold) from(counter string, per int, start int64) *planFold {
	if f == nil || f.counter != counter || f.per != per || f.through > start {
		return &planFold{counter: counter, per: per}
	}
	c := *f
	c.handles = f.handles.clone()
	return &c
}

// add folds e, an event after the fold's end; dropped says the window
// dropped its output.
func (f *planFold) add(e event.Event, dropped bool, c tokens.Counter, per int) {
	call := f.asked.read(e)
	f.handles.add(e)
	f.through = e.Seq
	if !projected(e) {
		return
	}
	f.events++
	if r, ok := e.Payload.(event.ToolResult); ok && dropped {
		f.tokens += c.Count(Address(r, e.Seq, call, e.Tokens))
	} else {
		f.tokens += min(e.Tokens, per)
	}
}

// compactionThrough is where the window starts: the latest compaction's
// Through (0: none).
func (st logState) compactionThrough() int64 {
	if st.compaction == nil {
		return 0
	}
	return st.compaction.Through
}

// originalKinds are the kinds a compaction's plan reads whole: what it
// renders for the summarizer (pins are never stubbed) and what its
// handles come from.
var originalKinds = []event.Kind{event.KindUserMessage, event.KindAssistantMessage, event.KindToolResult, event.KindInterrupted, event.KindFileChanged}

// each calls fn with each event of the log with seq in (after,
// through], in order, the stubs of kinds read whole (Stored).
func (in Input) each(after, through int64, kinds []event.Kind, fn func(event.Event) error) error {
	if in.Stored != nil {
		return in.Stored(after, through, kinds, fn)
	}
	for _, e := range in.Events {
		if e.Seq <= after {
			continue
		}
		if e.Seq > through {
			break
		}
		if s, ok := e.Payload.(*event.Stub); ok && slices.Contains(kinds, s.Of) {
			return fmt.Errorf("event %d is not held in memory, and the log gives no way to read it", e.Seq)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// asker pairs each tool result with the call it answers: the call of the
// same id in the latest model message (ids alone are not enough, some
// models reuse them from one message to the next).
type asker struct{ asked []event.ToolCall }

// read notes e and, for a tool result, returns its call.
func (a *asker) read(e event.Event) event.ToolCall {
	switch v := e.Payload.(type) {
	case event.AssistantMessage:
		a.asked = v.ToolCalls
	case *event.Stub:
		if v.Of == event.KindAssistantMessage {
			a.asked = nil
		}
	case event.ToolResult:
		for _, c := range a.asked {
			if c.ID == v.CallID {
				return c
			}
		}
	}
	return event.ToolCall{}
}

// handlesKept is how many handles a compaction keeps: the newest.
const handlesKept = 40

// handleList collects what the agent may need again from the events it
// is given, in order: artifact ids, paths and commands, each once.
type handleList struct {
	out  []string
	seen map[string]bool
}

func (h *handleList) put(s string) {
	s = strings.TrimSpace(s)
	if s == "" || h.seen[s] {
		return
	}
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	h.seen[s] = true
	h.out = append(h.out, s)
}

func (h *handleList) add(e event.Event) {
	switch v := e.Payload.(type) {
	case event.AssistantMessage:
		for _, c := range v.ToolCalls {
			var in map[string]any
			if json.Unmarshal(c.Input, &in) != nil {
				continue
			}
			for _, k := range []string{"path", "file", "file_path", "dir"} {
				if s, ok := in[k].(string); ok {
					h.put("path " + s)
				}
			}
			for _, k := range []string{"command", "cmd"} {
				if s, ok := in[k].(string); ok {
					h.put("command " + clip(s, 200))
				}
			}
		}
	case event.ToolResult:
		if v.Artifact != "" {
			h.put(fmt.Sprintf("artifact %s (output of %s)", v.Artifact, v.Name))
		}
		if v.Diff != nil {
			h.put("path " + v.Diff.Path)
		}
	}
}

func (h *handleList) clone() handleList {
	c := handleList{out: slices.Clone(h.out), seen: make(map[string]bool, len(h.seen))}
	for k := range h.seen {
		c.seen[k] = true
	}
	return c
}

// last returns the newest n handles.
func (h *handleList) last(n int) []string {
	if len(h.out) > n {
		return h.out[len(h.out)-n:]
	}
	return h.out
}
