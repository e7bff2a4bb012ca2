package contextwin

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
)

// CancelledResult is the result the projection gives a tool call that never
// got one (the turn was cancelled or the process died before it ran), so
// that every tool_use the model sees is answered.
const CancelledResult = `{"error":"cancelled_by_user"}`

// InterruptedNote ends the partial text of a response the user stopped,
// so the model never mistakes it for a finished thought.
const InterruptedNote = "\n\n[interrupted: the user stopped this response here]"

// interruptedNote says why a response ended early.
func interruptedNote(reason string) string {
	switch reason {
	case "restart":
		return "\n\n[interrupted: bridle restarted here; the rest of this response was lost]"
	case "provider_error":
		return "\n\n[interrupted: the model provider failed here]"
	case "write_failed":
		return "\n\n[interrupted: bridle could not write its log here, so the turn stopped]"
	}
	return InterruptedNote
}

// FileChangedNote is what the model reads where a file it had read changed
// on disk: the user edited it, or a command rewrote it.
func FileChangedNote(v event.FileChanged) string {
	what := "changed on disk"
	if v.Version == "" {
		what = "was deleted"
	}
	shown := v.Shown
	if shown == "" {
		shown = v.Path
	}
	when := ""
	if v.Turn > 0 {
		when = fmt.Sprintf(" at turn %d", v.Turn)
	}
	return fmt.Sprintf("[note from bridle: %s %s after you read it%s; what you saw of it is stale, read it again before relying on it]", shown, what, when)
}

// Project turns a session's events into the conversation the model sees:
// only the events after the latest compaction, preceded by its summary. It
// applies no budget; Window.Assemble does.
func Project(events []event.Event) []provider.Message {
	var p projector
	start := 0
	for i, e := range events {
		if c, ok := e.Payload.(event.Compaction); ok {
			start = i + 1
			p.summary = &c
		}
	}
	if p.summary != nil {
		p.user(provider.Part{Kind: provider.PartText, Text: SummaryText(*p.summary)})
	}
	for _, e := range events[start:] {
		if p.summary != nil && e.Seq <= p.summary.Through {
			continue
		}
		p.add(e)
	}
	p.closePending()
	return p.msgs
}

// SummaryText renders a compaction summary for the model. Its constraints
// and decisions are not repeated here: they join the pinned ones.
func SummaryText(c event.Compaction) string {
	var b strings.Builder
	b.WriteString("Summary of the earlier part of this session (the original events are in the log):\n")
	if c.Goal != "" {
		b.WriteString("Goal: " + c.Goal + "\n")
	}
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for _, it := range items {
			b.WriteString("- " + it + "\n")
		}
	}
	list("Done", c.Done)
	list("In progress", c.InProgress)
	list("Handles (paths, artifacts, commands)", c.Handles)
	if c.Summary != "" {
		b.WriteString(c.Summary)
	}
	return strings.TrimRight(b.String(), "\n")
}

type projector struct {
	msgs    []provider.Message
	summary *event.Compaction
	// pending holds the tool calls of the latest assistant message that
	// have no result yet, in call order.
	pending []string
	// output renders a tool result's content; nil shows it whole.
	output func(e event.Event, r event.ToolResult) string
	// shown lists the tool results the projection showed, and synthetic
	// counts the cancelled results it made up, for the budget.
	shown     []event.Event
	synthetic int
}

func (p *projector) add(e event.Event) {
	switch v := e.Payload.(type) {
	case event.UserMessage:
		p.closePending()
		p.user(userParts(v)...)
	case event.AssistantMessage:
		p.closePending()
		var parts []provider.Part
		if v.Thinking != "" {
			parts = append(parts, provider.Part{Kind: provider.PartThinking, Text: v.Thinking, Signature: v.Signature})
		}
		if v.Text != "" {
			parts = append(parts, provider.Part{Kind: provider.PartText, Text: v.Text})
		}
		for _, c := range v.ToolCalls {
			input := c.Input
			if len(input) == 0 || !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			parts = append(parts, provider.Part{Kind: provider.PartToolUse, ToolCallID: c.ID, ToolName: c.Name, Input: input})
			p.pending = append(p.pending, c.ID)
		}
		if len(parts) == 0 {
			// An empty response still takes a turn, or the roles would not alternate.
			parts = []provider.Part{{Kind: provider.PartText, Text: "(no answer)"}}
		}
		p.assistant(parts...)
	case event.ToolResult:
		if !p.resolve(v.CallID) {
			return // a result for a call the projection no longer shows
		}
		out := v.Output
		if p.output != nil {
			out = p.output(e, v)
		}
		p.shown = append(p.shown, e)
		p.user(provider.Part{Kind: provider.PartToolResult, ToolCallID: v.CallID, Text: out, IsError: v.IsError})
	case event.FileChanged:
		// Appended between model calls, when every call has its result.
		p.user(provider.Part{Kind: provider.PartText, Text: FileChangedNote(v)})
	case event.Interrupted:
		p.closePending()
		// Even an empty one takes the model's turn: the prompt before it got
		// no (full) answer, and the next prompt must not read as its sequel.
		p.assistant(provider.Part{Kind: provider.PartText, Text: strings.TrimLeft(v.Text+interruptedNote(v.Reason), "\n")})
	}
}

// resolve removes id from the pending calls and reports whether it was there.
func (p *projector) resolve(id string) bool {
	for i, c := range p.pending {
		if c == id {
			p.pending = append(p.pending[:i], p.pending[i+1:]...)
			return true
		}
	}
	return false
}

// closePending answers every call still without a result.
func (p *projector) closePending() {
	for _, id := range p.pending {
		p.synthetic++
		p.user(provider.Part{Kind: provider.PartToolResult, ToolCallID: id, Text: CancelledResult, IsError: true})
	}
	p.pending = nil
}

func (p *projector) user(parts ...provider.Part)      { p.push(provider.RoleUser, parts...) }
func (p *projector) assistant(parts ...provider.Part) { p.push(provider.RoleAssistant, parts...) }

// push appends parts, merging into the previous message when the role is
// the same: APIs want roles to alternate.
func (p *projector) push(role provider.Role, parts ...provider.Part) {
	if n := len(p.msgs); n > 0 && p.msgs[n-1].Role == role {
		p.msgs[n-1].Parts = append(p.msgs[n-1].Parts, parts...)
		return
	}
	p.msgs = append(p.msgs, provider.Message{Role: role, Parts: parts})
}
