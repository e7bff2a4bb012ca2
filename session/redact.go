package session

import (
	"context"
	"slices"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/tools"
)

// Every text an event holds is redacted before the event is stored,
// shown or sent to the model, whoever wrote it, and once, where it is
// made or recorded:
//   - the model's answer and thinking as they stream (redact.Chat, in
//     turn.call: what it passed on is the answer as recorded, and a
//     thinking block it changed loses its signature);
//   - a tool's output by the tool (tools.Result.Redacted), pins and
//     plans the model set by the remember and plan tools, the editor's
//     errors as they come back (redactedBuffers);
//   - a result's error text that no tool redacted (the session's own,
//     which quote the call's input, and tools.Errorf's) by turn.result;
//   - the rest by redactEvent, as recordsCounted records the event: the
//     model's tool-call inputs (redact.RedactJSON), approval summaries and
//     patterns, a compaction's summary, a subagent's task and answer,
//     provider errors.
//
// The user's prompt is redacted before it gets here, by gentler rules
// (redactPrompt), and is left as it is. tool_started, the permission
// question and the live cards take a call's input as its assistant
// message recorded it (Session.recordedCall), and the editor is shown
// the events as recorded: the live show redacts nothing again. A replay
// of the log redacts what its updates show (replay.Config.Logged): logs
// written before bridle redacted everything it records are shown
// redacted too.
//
// A tool call runs with the input the model wrote: redacting it would
// change what the call does (an edit that writes a token into a test
// fixture). Only the recorded copy is redacted, and marked so (Redacted):
// recovery does not run such a call again from the log.

// redactEvent returns p with the texts nothing redacted before it is
// recorded redacted by r.
func redactEvent(r *redact.Redactor, p event.Payload) event.Payload {
	switch v := p.(type) {
	case event.AssistantMessage:
		v.ToolCalls = slices.Clone(v.ToolCalls)
		for i, c := range v.ToolCalls {
			if in, ok := r.RedactJSON(c.Input); ok {
				v.ToolCalls[i].Input, v.ToolCalls[i].Redacted = in, true
			}
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
	case event.Compaction:
		v.Summary, v.Goal = r.Redact(v.Summary), r.Redact(v.Goal)
		for _, l := range []*[]string{&v.Constraints, &v.Decisions, &v.Done, &v.InProgress, &v.Handles} {
			*l = redactAll(r, *l)
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
	tools.Buffers
	// r is the session's redactor now (Session.redactor).
	r func() *redact.Redactor
}

func (b redactedBuffers) ReadText(ctx context.Context, path string) (string, <-chan struct{}, error) {
	text, late, err := b.Buffers.ReadText(ctx, path)
	return text, late, redactErr(b.r(), err)
}

func (b redactedBuffers) WriteText(ctx context.Context, path, content string) (<-chan struct{}, error) {
	late, err := b.Buffers.WriteText(ctx, path, content)
	return late, redactErr(b.r(), err)
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
