package session

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/session/event"
)

// Approvals are a state machine in the log, not a sentence in a prompt:
// approval_request → approval_granted (once | session) or approval_denied
// (once | session | cancelled). A session-scoped answer covers later calls
// of the same tool whose target matches its pattern. Only the user's
// answers write these events; nothing a tool returns or a model says can.

// Permission option ids, as ACP names their kinds.
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// scope is what a session-wide answer about one call covers.
type scope struct {
	// Pattern matches the call's target: a slash-separated glob over
	// workspace-relative paths ("src/app/**"), the exact command line, or
	// "*" for every call of the tool.
	Pattern string
	// Label says it to the user, inside an option's name.
	Label string
	paths []string
	cmd   string
}

// scopeOf derives the scope a session-wide answer would have for a call.
func (s *Session) scopeOf(p sandbox.Preview) scope {
	if p.Command != "" {
		return scope{Pattern: p.Command, Label: fmt.Sprintf("the command `%s`", p.Command), cmd: p.Command}
	}
	var rels []string
	for _, l := range p.Locations {
		rels = append(rels, s.rel(l.Path))
	}
	if len(rels) == 0 {
		return scope{Pattern: "*", Label: "every call"}
	}
	dir := path.Dir(rels[0])
	for _, r := range rels[1:] {
		for !within(r, dir) {
			dir = path.Dir(dir)
		}
	}
	pattern, label := dir+"/**", "files under "+dir+"/"
	if dir == "." {
		pattern, label = "**", "any file in the workspace"
	}
	return scope{Pattern: pattern, Label: label, paths: rels}
}

// rel makes a path workspace-relative and slash-separated when it is
// inside the workspace; others stay absolute.
func (s *Session) rel(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	if r, err := filepath.Rel(s.root.Dir(), p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(p)
}

func within(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// matches reports whether a recorded pattern covers a call's scope.
func matches(pattern string, call scope) bool {
	switch {
	case pattern == "*":
		return true
	case call.cmd != "":
		return pattern == call.cmd
	case len(call.paths) == 0:
		return false
	}
	for _, p := range call.paths {
		if !globMatch(pattern, p) {
			return false
		}
	}
	return true
}

// globMatch matches slash paths against a pattern whose only wildcard is
// a trailing "/**" (or "**" alone): the patterns scopeOf writes.
func globMatch(pattern, p string) bool {
	if pattern == "**" {
		return !strings.HasPrefix(p, "/")
	}
	if dir, ok := strings.CutSuffix(pattern, "/**"); ok {
		return within(p, dir)
	}
	return pattern == p
}

// standing returns the latest session-scoped answer in the log that
// covers this call: optAllowAlways, optRejectAlways or "".
func standing(events []event.Event, tool string, call scope) string {
	ans := ""
	for _, e := range events {
		switch v := e.Payload.(type) {
		case event.ApprovalGranted:
			if v.Tool == tool && v.Scope == "session" && matches(v.Pattern, call) {
				ans = optAllowAlways
			}
		case event.ApprovalDenied:
			if v.Tool == tool && v.Scope == "session" && matches(v.Pattern, call) {
				ans = optRejectAlways
			}
		}
	}
	return ans
}

// approve settles whether a call may run: from a standing answer in the
// log, or by asking the user. A denial is recorded as the call's result.
// It returns an error only when the log cannot be written.
func (t *turn) approve(ctx context.Context, key string, c provider.ToolCall, p sandbox.Preview) (bool, error) {
	s := t.s
	sc := s.scopeOf(p)
	switch standing(s.approvals(), c.Name, sc) {
	case optAllowAlways:
		return true, nil
	case optRejectAlways:
		return false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "denied",
			Output: fmt.Sprintf("the user declined %s calls on %s for this session", c.Name, sc.Label)})
	}
	summary := summaryOf(p)
	if _, err := s.append(ctx, event.ApprovalRequest{CallID: c.ID, Key: key, Tool: c.Name, Summary: summary, Pattern: sc.Pattern,
		Options: []string{optAllowOnce, optAllowAlways, optRejectOnce, optRejectAlways}}); err != nil {
		return false, err
	}
	return t.ask(ctx, key, c, p, sc, summary)
}

// ask puts a recorded approval request to the user and records the answer.
func (t *turn) ask(ctx context.Context, key string, c provider.ToolCall, p sandbox.Preview, sc scope, summary string) (bool, error) {
	s := t.s
	options := []Option{
		{ID: optAllowOnce, Name: "Allow once", Kind: optAllowOnce},
		{ID: optAllowAlways, Name: fmt.Sprintf("Allow %s on %s for this session", c.Name, sc.Label), Kind: optAllowAlways},
		{ID: optRejectOnce, Name: "Reject", Kind: optRejectOnce},
		{ID: optRejectAlways, Name: fmt.Sprintf("Reject %s on %s for this session", c.Name, sc.Label), Kind: optRejectAlways},
	}
	view := s.replayer().view(key, c.Name, c.Input)
	if p.Diff != nil {
		view.Diff = &Diff{Path: s.replayer().abs(p.Diff.Path), OldText: p.Diff.OldText, NewText: p.Diff.NewText}
	}
	ans, err := s.client().RequestPermission(ctx, s.row.ID, Question{Tool: view, Options: options})
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
	if err != nil || ans.Cancelled || ctx.Err() != nil {
		if _, aerr := s.append(ctx, event.ApprovalDenied{CallID: c.ID, Key: key, Tool: c.Name, Scope: "cancelled", Cancelled: true}); aerr != nil {
			return false, aerr
		}
		return false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "cancelled", Output: contextwin.CancelledResult})
	}
	switch ans.OptionID {
	case optAllowOnce, optAllowAlways:
		g := event.ApprovalGranted{CallID: c.ID, Key: key, Tool: c.Name, Scope: "once"}
		if ans.OptionID == optAllowAlways {
			g.Scope, g.Pattern = "session", sc.Pattern
		}
		_, err := s.append(ctx, g)
		if err == nil && g.Scope == "session" {
			err = s.standInParent(ctx, g)
		}
		return err == nil, err
	default:
		d := event.ApprovalDenied{CallID: c.ID, Key: key, Tool: c.Name, Scope: "once"}
		if ans.OptionID == optRejectAlways {
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
		return false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "denied",
			Output: "the user declined: " + summary})
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
