package session

import (
	"context"
	"slices"

	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/sandbox/redact"
	"github.com/bridle-dev/bridle/session/event"
)

// Every text an event holds is redacted before the event is stored,
// shown or sent to the model, whoever wrote it: the tools redact what
// they return, and redactEvent the rest — what the model wrote (its
// answer, its thinking, its tool calls' inputs, a compaction's summary, a
// subagent's task and answer), the error texts of results (the editor's,
// a tool's, the session's own, which quote inputs), approval summaries
// and provider errors. The user's prompt is redacted before it gets here,
// by gentler rules (redactPrompt), and is left as it is.
//
// A tool call runs with the input the model wrote: redacting it would
// change what the call does (an edit that writes a token into a test
// fixture). Only the recorded copy is redacted, and marked so (Redacted):
// recovery does not run such a call again from the log.

// redactEvent returns p with its texts redacted by r.
func redactEvent(r *redact.Redactor, p event.Payload) event.Payload {
	switch v := p.(type) {
	case event.AssistantMessage:
		v.Text = r.Redact(v.Text)
		if thinking := r.Redact(v.Thinking); thinking != v.Thinking {
			// A provider checks a signed thinking block against its
			// signature: the redacted one is kept, unsigned, and is not
			// sent back (the provider drops unsigned thinking).
			v.Thinking, v.Signature = thinking, ""
		}
		v.ToolCalls = slices.Clone(v.ToolCalls)
		for i, c := range v.ToolCalls {
			if in, ok := r.RedactJSON(c.Input); ok {
				v.ToolCalls[i].Input, v.ToolCalls[i].Redacted = in, true
			}
		}
		return v
	case event.ToolStarted:
		if in, ok := r.RedactJSON(v.Input); ok {
			v.Input, v.Redacted = in, true
		}
		return v
	case event.ToolResult:
		// A tool's own output is redacted by the tool (sandbox.Result);
		// an error's text may quote what the model or the editor wrote.
		if v.IsError || v.Status != "completed" {
			v.Output = r.Redact(v.Output)
		}
		return v
	case event.ApprovalRequest:
		v.Summary, v.Pattern = r.Redact(v.Summary), r.Redact(v.Pattern)
		return v
	case event.ApprovalGranted:
		// A redacted command is no longer the call's: a standing answer
		// for it is asked again rather than covering more.
		v.Pattern = r.Redact(v.Pattern)
		return v
	case event.ApprovalDenied:
		v.Pattern = r.Redact(v.Pattern)
		return v
	case event.Interrupted:
		v.Text, v.Thinking = r.Redact(v.Text), r.Redact(v.Thinking)
		return v
	case event.Compaction:
		v.Summary, v.Goal = r.Redact(v.Summary), r.Redact(v.Goal)
		for _, l := range []*[]string{&v.Constraints, &v.Decisions, &v.Done, &v.InProgress, &v.Handles} {
			*l = redactAll(r, *l)
		}
		return v
	case event.ConstraintPinned:
		if v.Source != "user" {
			v.Text = r.Redact(v.Text)
		}
		return v
	case event.DecisionRecorded:
		if v.Source != "user" {
			v.Text = r.Redact(v.Text)
		}
		return v
	case event.PlanUpdated:
		v.Entries = slices.Clone(v.Entries)
		for i := range v.Entries {
			v.Entries[i].Content = r.Redact(v.Entries[i].Content)
		}
		return v
	case event.SubagentStarted:
		v.Prompt, v.Description = r.Redact(v.Prompt), r.Redact(v.Description)
		return v
	case event.SubagentFinished:
		v.Answer = r.Redact(v.Answer)
		return v
	case event.ProviderError:
		v.Message = r.Redact(v.Message)
		return v
	}
	return p
}

func redactAll(r *redact.Redactor, l []string) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = r.Redact(s)
	}
	return out
}

// redactedBuffers are the editor's buffers with the editor's error texts
// redacted: they reach the model (a read falls back to the disk and says
// why), the log and the editor's card. The error wrapped is kept for
// errors.Is.
type redactedBuffers struct {
	sandbox.Buffers
	r *redact.Redactor
}

func (b redactedBuffers) ReadText(ctx context.Context, path string) (string, <-chan struct{}, error) {
	text, late, err := b.Buffers.ReadText(ctx, path)
	return text, late, redactErr(b.r, err)
}

func (b redactedBuffers) WriteText(ctx context.Context, path, content string) (<-chan struct{}, error) {
	late, err := b.Buffers.WriteText(ctx, path, content)
	return late, redactErr(b.r, err)
}

func redactErr(r *redact.Redactor, err error) error {
	if err == nil {
		return nil
	}
	if msg := r.Redact(err.Error()); msg != err.Error() {
		return &redactedError{msg: msg, err: err}
	}
	return err
}

// redactedError is an error whose text was redacted.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
