package session

import (
	"context"
	"fmt"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/display"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/session/replay"
	"github.com/bridle-dev/bridle/tools"
)

// Approvals are a state machine in the log, not a sentence in a prompt:
// approval_request → approval_granted (once | session) or approval_denied
// (once | session | cancelled). A session-scoped answer covers later calls
// of the same tool whose target matches its pattern. Only the user's
// answers write these events; nothing a tool returns or a model says can.

// The policy — modes, scopes, patterns, which answer stands — is the
// permission package's; this file reads the answers from the log, asks,
// and records.

// Permission option ids, as ACP names their kinds.
const (
	optAllowOnce    = permission.AllowOnce
	optAllowAlways  = permission.AllowAlways
	optRejectOnce   = permission.RejectOnce
	optRejectAlways = permission.RejectAlways
)

// scopeOf derives the scope a session-wide answer would have for a call.
func (s *Session) scopeOf(p tools.Preview) permission.Scope {
	if p.Scope != nil {
		return *p.Scope
	}
	if p.Host != "" {
		return permission.HostScope(p.Host)
	}
	paths := make([]string, len(p.Locations))
	for i, l := range p.Locations {
		paths[i] = l.Path
	}
	return permission.ScopeOf(s.root.Dir(), p.Command, paths)
}

// answers are the session-scoped answers in a log, in order.
func answers(events []event.Event) []permission.Answer {
	var out []permission.Answer
	for _, e := range events {
		switch v := e.Payload.(type) {
		case event.ApprovalGranted:
			if v.Scope == "session" {
				out = append(out, permission.Answer{Tool: v.Tool, Option: optAllowAlways, Pattern: v.Pattern})
			}
		case event.ApprovalDenied:
			if v.Scope == "session" {
				out = append(out, permission.Answer{Tool: v.Tool, Option: optRejectAlways, Pattern: v.Pattern})
			}
		}
	}
	return out
}

// standing returns the latest session-scoped answer in the log that
// covers this call: optAllowAlways, optRejectAlways or "".
func standing(events []event.Event, tool string, call permission.Scope) string {
	return permission.Standing(answers(events), tool, call)
}

// approve settles whether a call may run: by the mode (the call's
// verdict), from a standing answer in the log, or by asking the user. A
// denial is recorded as the call's result. asked says the user was asked
// (and may have taken minutes to answer). It returns an error only when
// the log cannot be written.
func (t *turn) approve(ctx context.Context, key string, c provider.ToolCall, call *tools.Call) (granted, asked bool, err error) {
	mode, effect, p := call.Mode, call.Effect, call.Preview
	if call.Verdict == permission.Allow {
		if effect == permission.EffectExecute && t.s.m.cfg.Unconfined != nil {
			if why := t.s.m.cfg.Unconfined(); why != "" {
				return t.approveUnconfined(ctx, key, c, p, why)
			}
		}
		return true, false, nil // the log need not be read
	}
	s := t.s
	sc := s.scopeOf(p)
	v := permission.Settle(call.Verdict, answers(s.approvals()), c.Name, sc)
	switch v.Decision {
	case permission.Allow:
		return true, false, nil
	case permission.Deny:
		out := fmt.Sprintf("the user declined %s calls on %s for this session", c.Name, sc.Label)
		if v.Standing == "" {
			out = fmt.Sprintf("tool %q is not available in %s mode", c.Name, mode)
		}
		return false, false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "denied", Output: out})
	}
	summary := summaryOf(p)
	if _, err := s.append(ctx, event.ApprovalRequest{CallID: c.ID, Key: key, Tool: c.Name, Summary: summary, Pattern: sc.Pattern,
		Options: permission.Options()}); err != nil {
		return false, false, err
	}
	granted, err = t.ask(ctx, key, c, p, sc, summary)
	return granted, true, err
}

// unconfinedLabel names what a session-wide answer about running without
// the sandbox covers.
const unconfinedLabel = "every command (without the sandbox)"

// approveUnconfined settles a command that a mode would run at once
// (full-auto) on a machine whose box cannot keep it in: full-auto
// promises commands in the box, so running one outside it is the user's
// call. The question offers a session-wide answer for every command, so
// the user is asked once per session; a standing answer for the exact
// command also settles it.
func (t *turn) approveUnconfined(ctx context.Context, key string, c provider.ToolCall, p tools.Preview, why string) (granted, asked bool, err error) {
	s := t.s
	sc := permission.Scope{Pattern: "*", Label: unconfinedLabel, Command: p.Command}
	switch permission.Standing(answers(s.approvals()), c.Name, sc) {
	case permission.AllowAlways:
		return true, false, nil
	case permission.RejectAlways:
		return false, false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "denied",
			Output: "the user declined commands without the sandbox for this session: " + why})
	}
	summary := "without the sandbox (" + why + "): " + summaryOf(p)
	if _, err := s.append(ctx, event.ApprovalRequest{CallID: c.ID, Key: key, Tool: c.Name, Summary: summary, Pattern: sc.Pattern,
		Options: permission.Options()}); err != nil {
		return false, false, err
	}
	granted, err = t.ask(ctx, key, c, p, sc, summary)
	return granted, true, err
}

// ask puts a recorded approval request to the user and records the answer.
func (t *turn) ask(ctx context.Context, key string, c provider.ToolCall, p tools.Preview, sc permission.Scope, summary string) (bool, error) {
	s := t.s
	// The scope's label holds the model's command or paths: redacted like
	// its card, and shown as a label, like the card's title.
	label := s.redactor().Redact(sc.Label)
	options := []acp.PermissionOption{
		{OptionID: optAllowOnce, Name: "Allow once", Kind: optAllowOnce},
		{OptionID: optAllowAlways, Name: display.Label(fmt.Sprintf("Allow %s on %s for this session", c.Name, label)), Kind: optAllowAlways},
		{OptionID: optRejectOnce, Name: "Reject", Kind: optRejectOnce},
		{OptionID: optRejectAlways, Name: display.Label(fmt.Sprintf("Reject %s on %s for this session", c.Name, label)), Kind: optRejectAlways},
	}
	r := replay.New(s.replayConfig())
	input, _ := s.recordedInput(key, c)
	call := r.ViewOf(key, c.Name, input, p) // the call's own preview: not made again
	card := acp.ToolCallUpdate{ToolCallID: call.ToolCallID, Title: &call.Title, Kind: call.Kind, Status: call.Status,
		Locations: call.Locations, RawInput: call.RawInput}
	if p.Diff != nil {
		if d := r.Diff(p.Diff.Path, p.Diff.OldText, p.Diff.NewText); d != nil {
			card.Content = []acp.ToolCallContent{{Diff: d}}
		}
	}
	for _, diff := range p.Diffs {
		// A rename's: every file it changes, in the one question.
		if d := r.Diff(diff.Path, diff.OldText, diff.NewText); d != nil {
			card.Content = append(card.Content, acp.ToolCallContent{Diff: d})
		}
	}
	// _meta.bridle says what a session-wide answer would cover, in the
	// permission package's terms, so that a client with no person
	// (`bridle run --allow`) decides by the same patterns. A target
	// holding a secret is not sent at all (Secret): its redacted form
	// would be a pattern whose marker stands for any such secret.
	scope := scopeMeta(s.redactor(), sc)
	meta := map[string]any{"bridle": map[string]any{"tool": c.Name, "scope": scope}}
	resp, err := s.client().RequestPermission(ctx, acp.RequestPermissionRequest{SessionID: s.row.ID, ToolCall: card, Options: options, Meta: meta})
	if err != nil && ctx.Err() == nil {
		// The editor failed to put the question: the user said nothing,
		// so this is no cancel of theirs, and the model hears why.
		s.m.log.Warn("permission request failed", "session", s.row.ID, "err", err)
		if _, aerr := s.append(ctx, event.ApprovalDenied{CallID: c.ID, Key: key, Tool: c.Name, Scope: "client_error"}); aerr != nil {
			return false, aerr
		}
		return false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "denied",
			Output: fmt.Sprintf("the editor failed to ask the user (%v): not run", err)})
	}
	answer := Answered(resp)
	if err != nil || answer == "" || ctx.Err() != nil {
		if _, aerr := s.append(ctx, event.ApprovalDenied{CallID: c.ID, Key: key, Tool: c.Name, Scope: "cancelled", Cancelled: true}); aerr != nil {
			return false, aerr
		}
		return false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "cancelled", Output: contextwin.CancelledResult})
	}
	switch answer {
	case optAllowOnce, optAllowAlways:
		g := event.ApprovalGranted{CallID: c.ID, Key: key, Tool: c.Name, Scope: "once"}
		if answer == optAllowAlways {
			g.Scope, g.Pattern = "session", sc.Pattern
		}
		_, err := s.append(ctx, g)
		if err == nil && g.Scope == "session" {
			err = s.standInParent(ctx, g)
		}
		return err == nil, err
	default:
		d := event.ApprovalDenied{CallID: c.ID, Key: key, Tool: c.Name, Scope: "once"}
		if answer == optRejectAlways {
			d.Scope, d.Pattern = "session", sc.Pattern
		}
		if _, err := s.append(ctx, d); err != nil {
			return false, err
		}
		if d.Scope == "session" {
			if err := s.standInParent(ctx, d); err != nil {
				return false, err
			}
		}
		out := "the user declined: " + summary
		if Unattended(resp) {
			out = "not run: no one is there to approve it (a headless run refuses what needs approval): " + summary
		}
		return false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "denied", Output: out})
	}
}

// approvals is the log that standing answers are read from: a child's
// own, after its parent's (the user answers a child's questions in the
// parent's conversation, and a session-wide answer there covers the
// child's calls too).
func (s *Session) approvals() []event.Event {
	if s.parent == nil {
		return s.Events()
	}
	return append(s.parent.approvals(), s.Events()...)
}

// standInParent records a child's session-wide answer in the parent's log
// as well: the user gave it in the parent's conversation, so it stands
// for the rest of that session, other subagents included. The child's own
// log keeps it too, for the call's state machine.
func (s *Session) standInParent(ctx context.Context, answer event.Payload) error {
	if s.parent == nil {
		return nil
	}
	_, err := s.parent.append(ctx, answer)
	return err
}

// ScopeMeta is a permission request's _meta.bridle.scope: the call's
// target as permission.Scope has it (Pattern is what an "always" answer
// would record).
type ScopeMeta struct {
	Pattern string   `json:"pattern"`
	Command string   `json:"command,omitempty"`
	Paths   []string `json:"paths,omitempty"`
	// Host is the host and port a web_fetch reaches.
	Host string `json:"host,omitempty"`
	// Target is what else the call acts on ("input:bg1").
	Target string `json:"target,omitempty"`
	// Secret says the target held a secret: nothing else is sent, so no
	// pattern but "*" covers the call.
	Secret bool `json:"secret,omitempty"`
}

// scopeMeta is sc as a permission request carries it: whole, or, when
// redaction would change any of it, only Secret.
func scopeMeta(red interface{ Redact(string) string }, sc permission.Scope) ScopeMeta {
	m := ScopeMeta{Pattern: sc.Pattern, Command: sc.Command, Paths: sc.Paths, Host: sc.Host, Target: sc.Target}
	changed := red.Redact(sc.Pattern) != sc.Pattern || red.Redact(sc.Command) != sc.Command
	for _, p := range sc.Paths {
		changed = changed || red.Redact(p) != p
	}
	if changed {
		return ScopeMeta{Secret: true}
	}
	return m
}
