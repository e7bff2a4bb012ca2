package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

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
			if in, ok := redactInput(r, c.Input); ok {
				v.ToolCalls[i].Input, v.ToolCalls[i].Redacted = in, true
			}
		}
		return v
	case event.ToolStarted:
		if in, ok := redactInput(r, v.Input); ok {
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

// redactInput returns a tool call's input with the secrets in its strings
// replaced, and whether there were any. JSON escapes are undone before
// the strings are looked at; the result is valid JSON (the markers need
// no escaping), its keys in the order they had.
func redactInput(r *redact.Redactor, input json.RawMessage) (json.RawMessage, bool) {
	if len(input) == 0 || r.Redact(string(input)) == string(input) {
		return input, false
	}
	var out bytes.Buffer
	changed, err := redactJSON(r, json.NewDecoder(bytes.NewReader(input)), &out)
	if err != nil || !json.Valid(out.Bytes()) {
		// Not JSON after all (the provider keeps invalid arguments as a
		// JSON string, so this is not expected): redact it as text,
		// kept as a JSON string.
		b, _ := json.Marshal(r.Redact(string(input)))
		return b, true
	}
	if !changed {
		return input, false
	}
	return out.Bytes(), true
}

// redactJSON copies the next JSON value of dec to out with its strings
// (keys too) redacted, and reports whether any changed.
func redactJSON(r *redact.Redactor, dec *json.Decoder, out *bytes.Buffer) (bool, error) {
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	switch t := tok.(type) {
	case json.Delim:
		out.WriteString(t.String())
		changed, first := false, true
		for dec.More() {
			if !first {
				out.WriteByte(',')
			}
			first = false
			if t == '{' {
				c, err := redactJSON(r, dec, out) // the key
				if err != nil {
					return false, err
				}
				changed = changed || c
				out.WriteByte(':')
			}
			c, err := redactJSON(r, dec, out)
			if err != nil {
				return false, err
			}
			changed = changed || c
		}
		end, err := dec.Token()
		if err != nil {
			return false, err
		}
		d, ok := end.(json.Delim)
		if !ok {
			return false, errors.New("unbalanced JSON")
		}
		out.WriteString(d.String())
		return changed, nil
	case string:
		red := r.Redact(t)
		writeString(out, red)
		return red != t, nil
	case json.Number:
		out.WriteString(t.String())
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	}
	return false, nil
}

// writeString writes s as a JSON string, without escaping <, > and &.
func writeString(out *bytes.Buffer, s string) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	out.WriteString(strings.TrimSuffix(b.String(), "\n"))
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
