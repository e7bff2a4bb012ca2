package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/session/event"
	"github.com/bridle-dev/bridle/store"
)

// resolveTask decides the result of a task call that a restart cut short.
// The subagent is not run again (bridle never restarts a turn on its own):
// its own log, recovered by the usual rules, says how far it got.
func (s *Session) resolveTask(ctx context.Context, cs *callState) event.ToolResult {
	r := event.ToolResult{CallID: cs.started.CallID, Key: cs.key, Name: taskName}
	var st *event.SubagentStarted
	var fin *event.SubagentFinished
	for _, e := range s.Events() {
		switch v := e.Payload.(type) {
		case event.SubagentStarted:
			if v.Key == cs.key {
				st = &v
			}
		case event.SubagentFinished:
			if v.Key == cs.key {
				fin = &v
			}
		}
	}
	var o outcome
	switch {
	case fin != nil:
		// It had finished; only the call's result was not recorded.
		o = outcome{status: fin.Status, answer: fin.Answer}
	case st == nil:
		r.IsError, r.Status = true, "cancelled"
		r.Output = "not run: bridle restarted before the subagent started"
		return r
	default:
		var err error
		if o, err = s.m.recoverChild(ctx, s, *st); err != nil {
			o = outcome{status: "interrupted", answer: fmt.Sprintf("[the subagent (session %s) was cut short when bridle restarted, and its log could not be read: %v]", st.ChildID, err)}
		}
		s.finishTask(ctx, *st, o)
	}
	res := sandbox.CapOutput(s.env(cs.key), answerCaps, o.answer)
	r.Output, r.Artifact, r.Lines, r.Bytes = res.Output, res.Artifact, res.Lines, res.Bytes
	switch o.status {
	case "completed", "budget_exhausted":
		r.Status = "completed"
	case "cancelled":
		r.IsError, r.Status = true, "cancelled"
	case "interrupted":
		r.IsError, r.Status = true, "unknown"
	default:
		r.IsError, r.Status = true, "failed"
	}
	return r
}

// recoverChild recovers a subagent's session that a restart cut short
// and says how it ended. The child is not made live.
func (m *Manager) recoverChild(ctx context.Context, parent *Session, st event.SubagentStarted) (outcome, error) {
	row, err := m.cfg.Store.Session(ctx, st.ChildID)
	if errors.Is(err, store.ErrNotFound) {
		return outcome{status: "interrupted", answer: "[not run: bridle restarted before the subagent's session was created]"}, nil
	}
	if err != nil {
		return outcome{}, err
	}
	var events []event.Event
	m.mu.Lock()
	live, ok := m.live[st.ChildID]
	m.mu.Unlock()
	if ok {
		// Opened (and so recovered) already, by its id.
		events = live.Events()
	} else {
		if err := m.lease(ctx, st.ChildID); err != nil {
			return outcome{}, err
		}
		defer m.release(st.ChildID)
		recs, err := m.cfg.Store.Events(ctx, st.ChildID, 0)
		if err != nil {
			return outcome{}, err
		}
		if events, err = decodeAll(recs); err != nil {
			return outcome{}, err
		}
		c, err := newSession(m, row, events)
		if err != nil {
			return outcome{}, err
		}
		defer c.close()
		c.parent, c.allowed = parent, st.Tools
		c.muted.Store(true)
		if err := c.recover(ctx); err != nil {
			return outcome{}, err
		}
		events = c.Events()
	}
	return recoveredOutcome(st, events), nil
}

// recoveredOutcome reads how a recovered child's turn ended.
func recoveredOutcome(st event.SubagentStarted, events []event.Event) outcome {
	stop, calls := "", 0
	var steps []string
	for _, e := range events {
		switch v := e.Payload.(type) {
		case event.TurnFinished:
			stop = v.StopReason
		case event.AssistantMessage:
			calls++
		case event.ToolResult:
			steps = append(steps, fmt.Sprintf("%s: %s", v.Name, v.Status))
		}
	}
	said, last := childText(events)
	o := outcome{turns: calls}
	switch stop {
	case string(StopEndTurn):
		o.status, o.answer = "completed", last
		if last == "" {
			o.answer = join(said, "[the subagent finished without a final message]")
		}
	case string(StopMaxTurnRequests), string(StopMaxTokens):
		o.status = "budget_exhausted"
		o.answer = join(said, fmt.Sprintf("[the subagent stopped before finishing: it used its budget (%s). This is what it had; its whole log is session %s]", stop, st.ChildID))
	case string(StopCancelled):
		o.status = "cancelled"
		o.answer = join(said, "[the subagent was cancelled before it finished; this is what it had]")
	case "error":
		o.status = "failed"
		o.answer = join(said, "[the subagent's model failed; see its log, session "+st.ChildID+"]")
	default:
		did := "it had not called any tool"
		if len(steps) > 0 {
			did = "its tool calls ended: " + strings.Join(steps, ", ")
		}
		o.status = "interrupted"
		o.answer = join(said, fmt.Sprintf("[the subagent (session %s) was cut short when bridle restarted, after %d model calls, and was not run again; %s. Check its work before relying on it; `bridle log %s` shows everything it did]",
			st.ChildID, calls, did, st.ChildID))
	}
	return o
}
