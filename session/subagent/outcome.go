package subagent

import (
	"context"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/tools"
)

// The stop reasons a child's turn ends with: ACP's, as session.StopReason
// spells them.
const (
	stopEndTurn         = string(acp.StopReasonEndTurn)
	stopMaxTokens       = string(acp.StopReasonMaxTokens)
	stopMaxTurnRequests = string(acp.StopReasonMaxTurnRequests)
	stopCancelled       = string(acp.StopReasonCancelled)
)

// outcome is how a subagent ended, as its parent learns it.
type outcome struct {
	status string
	answer string
	turns  int
	tokens int
}

// outcomeOf reads a child's log after its turn: the answer is its last
// message when it finished, otherwise everything it said, with a mark
// saying why it stopped.
func outcomeOf(id string, r Run, b Budget) outcome {
	o := outcome{turns: r.Iters, tokens: r.Used}
	said, last := childText(r.Events)
	switch {
	case r.Err != nil:
		o.status = "failed"
		o.answer = join(said, fmt.Sprintf("[the subagent failed: %v]", r.Err))
	case r.Stop == stopEndTurn:
		o.status, o.answer = "completed", last
		if last == "" {
			o.answer = join(said, "[the subagent finished without a final message]")
		}
	case r.Stop == stopCancelled:
		o.status = "cancelled"
		o.answer = join(said, "[the subagent was cancelled before it finished; this is what it had]")
	case r.Spent && r.Stop == stopMaxTokens:
		o.status = "budget_exhausted"
		o.answer = join(said, fmt.Sprintf("[the subagent stopped before finishing: its model calls used %d tokens of its budget of %d. This is what it had; its whole log is session %s]",
			r.Used, b.Tokens, id))
	case r.Spent:
		o.status = "budget_exhausted"
		o.answer = join(said, fmt.Sprintf("[the subagent stopped before finishing: it used its budget of %d model calls. This is what it had; its whole log is session %s]",
			r.Iters, id))
	default:
		o.status = "completed"
		o.answer = join(said, fmt.Sprintf("[the subagent's last model call ended with %s]", r.Stop))
	}
	return o
}

// childText returns what a child said in its turn: every message (partial
// ones included) and the last complete non-empty one.
func childText(events []event.Event) (said []string, last string) {
	for _, e := range events {
		switch v := e.Payload.(type) {
		case event.AssistantMessage:
			if t := strings.TrimSpace(v.Text); t != "" {
				said = append(said, t)
				last = t
			}
		case event.Interrupted:
			if t := strings.TrimSpace(v.Text); t != "" {
				said = append(said, t+" [interrupted]")
			}
		}
	}
	return said, last
}

func join(said []string, mark string) string {
	return strings.TrimSpace(strings.Join(said, "\n\n") + "\n\n" + mark)
}

// Resolve decides the result of the task call key that a restart cut
// short. The subagent is not run again (bridle never restarts a turn on
// its own): its own log, recovered by the usual rules, says how far it
// got.
func Resolve(ctx context.Context, p Parent, callID, key string) event.ToolResult {
	r := event.ToolResult{CallID: callID, Key: key, Name: Name}
	var st *event.SubagentStarted
	var fin *event.SubagentFinished
	for _, e := range p.Events() {
		switch v := e.Payload.(type) {
		case event.SubagentStarted:
			if v.Key == key {
				st = &v
			}
		case event.SubagentFinished:
			if v.Key == key {
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
		events, created, err := p.Reopen(ctx, *st)
		switch {
		case err != nil:
			o = outcome{status: "interrupted", answer: fmt.Sprintf("[the subagent (session %s) was cut short when bridle restarted, and its log could not be read: %v]", st.ChildID, err)}
		case !created:
			o = outcome{status: "interrupted", answer: "[not run: bridle restarted before the subagent's session was created]"}
		default:
			o = recoveredOutcome(*st, events)
		}
		finish(ctx, p, *st, o)
	}
	res := tools.CapOutput(p.Env(key), answerCaps, o.answer)
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
	case stopEndTurn:
		o.status, o.answer = "completed", last
		if last == "" {
			o.answer = join(said, "[the subagent finished without a final message]")
		}
	case stopMaxTurnRequests, stopMaxTokens:
		o.status = "budget_exhausted"
		o.answer = join(said, fmt.Sprintf("[the subagent stopped before finishing: it used its budget (%s). This is what it had; its whole log is session %s]", stop, st.ChildID))
	case stopCancelled:
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

// Resolve is Resolve for a call of t that started and has no result:
// the session recovers it without knowing it is the task tool.
func (t *Tool) Resolve(ctx context.Context, callID, key string) event.ToolResult {
	return Resolve(ctx, t.p, callID, key)
}
