package session

import (
	"context"
	"fmt"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/session/event"
)

// runCall runs call index i of the assistant event at seq: checks the
// mode, asks for approval if needed, records tool_started, runs the tool
// and records its result with the call's idempotency record.
func (t *turn) runCall(ctx context.Context, seq int64, i int, c provider.ToolCall) error {
	s := t.s
	key := callKey(s.row.ID, seq, i)
	tool, ok := t.reg.Get(c.Name)
	if !ok {
		return t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "unavailable",
			Output: fmt.Sprintf("tool %q is not available in mode %s", c.Name, t.reg.Mode())})
	}
	env := &sandbox.Env{Root: s.root, Key: key}
	preview, err := tool.Preview(env, c.Input)
	if err != nil {
		return t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "failed", Output: err.Error()})
	}
	if t.reg.Decide(tool) == sandbox.Ask {
		granted, err := t.approve(ctx, key, c, tool, preview)
		if err != nil {
			return err
		}
		if !granted {
			return nil
		}
	}
	evs, err := s.appendKeyed(ctx, key, event.ToolStarted{CallID: c.ID, Key: key, Name: c.Name, Input: c.Input})
	if err != nil {
		return err
	}
	for _, u := range s.replayer().updates(evs[0]) {
		s.send(ctx, u)
	}
	res := tool.Run(ctx, env, c.Input)
	r := event.ToolResult{CallID: c.ID, Name: c.Name, Output: res.Output, IsError: res.IsError, Status: "completed",
		Artifact: res.Artifact, Lines: res.Lines, Bytes: res.Bytes}
	switch {
	case ctx.Err() != nil:
		r.Status, r.IsError = "cancelled", true
		if r.Output == "" {
			r.Output = "cancelled by the user while running"
		}
	case res.IsError:
		r.Status = "failed"
	}
	if res.Diff != nil {
		r.Diff = &event.Diff{Path: res.Diff.Path, OldText: res.Diff.OldText, NewText: res.Diff.NewText}
	}
	for _, l := range res.Locations {
		r.Locations = append(r.Locations, l.Path)
	}
	return t.result(ctx, key, r)
}

// cancelCall closes a call that will not run because the turn was cancelled.
func (t *turn) cancelCall(ctx context.Context, seq int64, i int, c provider.ToolCall) error {
	key := callKey(t.s.row.ID, seq, i)
	return t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "cancelled",
		Output: contextwin.CancelledResult})
}

func (t *turn) result(ctx context.Context, key string, r event.ToolResult) error {
	r.Key = key
	evs, err := t.s.appendKeyed(ctx, key, r)
	if err != nil {
		return err
	}
	for _, u := range t.s.replayer().updates(evs[0]) {
		t.s.send(ctx, u)
	}
	return nil
}

// Permission option ids, as ACP names their kinds.
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// approve settles whether a call may run: from a standing grant or
// rejection in the log, or by asking the user. A denial is recorded as the
// call's result. It returns an error only when the log cannot be written.
func (t *turn) approve(ctx context.Context, key string, c provider.ToolCall, tool sandbox.Tool, p sandbox.Preview) (bool, error) {
	s := t.s
	switch standing(s.Events(), c.Name) {
	case optAllowAlways:
		return true, nil
	case optRejectAlways:
		return false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "denied",
			Output: fmt.Sprintf("the user declined all %s calls for this session", c.Name)})
	}
	summary := p.Command
	if summary == "" {
		summary = p.Title
	}
	options := []Option{
		{ID: optAllowOnce, Name: "Allow once", Kind: optAllowOnce},
		{ID: optAllowAlways, Name: fmt.Sprintf("Allow %s for this session", c.Name), Kind: optAllowAlways},
		{ID: optRejectOnce, Name: "Reject", Kind: optRejectOnce},
		{ID: optRejectAlways, Name: fmt.Sprintf("Reject %s for this session", c.Name), Kind: optRejectAlways},
	}
	ids := make([]string, len(options))
	for i, o := range options {
		ids[i] = o.ID
	}
	if _, err := s.append(ctx, event.ApprovalRequest{CallID: c.ID, Key: key, Tool: c.Name, Summary: summary, Options: ids}); err != nil {
		return false, err
	}
	view := s.replayer().view(key, c.Name, c.Input)
	if p.Diff != nil {
		view.Diff = &Diff{Path: s.replayer().abs(p.Diff.Path), OldText: p.Diff.OldText, NewText: p.Diff.NewText}
	}
	ans, err := s.m.cfg.Client.RequestPermission(ctx, s.row.ID, Question{Tool: view, Options: options})
	if err != nil || ans.Cancelled || ctx.Err() != nil {
		if _, aerr := s.append(ctx, event.ApprovalDenied{CallID: c.ID, Key: key, Tool: c.Name, Scope: "cancelled", Cancelled: true}); aerr != nil {
			return false, aerr
		}
		if err != nil && ctx.Err() == nil {
			s.m.log.Warn("permission request failed", "session", s.row.ID, "err", err)
		}
		return false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "cancelled", Output: contextwin.CancelledResult})
	}
	switch ans.OptionID {
	case optAllowOnce, optAllowAlways:
		scope := "once"
		if ans.OptionID == optAllowAlways {
			scope = "session"
		}
		_, err := s.append(ctx, event.ApprovalGranted{CallID: c.ID, Key: key, Tool: c.Name, Scope: scope})
		return err == nil, err
	default:
		scope := "once"
		if ans.OptionID == optRejectAlways {
			scope = "session"
		}
		if _, err := s.append(ctx, event.ApprovalDenied{CallID: c.ID, Key: key, Tool: c.Name, Scope: scope}); err != nil {
			return false, err
		}
		return false, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "denied",
			Output: "the user declined: " + summary})
	}
}

// standing returns the latest session-scoped answer about tool in the log.
func standing(events []event.Event, tool string) string {
	ans := ""
	for _, e := range events {
		switch v := e.Payload.(type) {
		case event.ApprovalGranted:
			if v.Tool == tool && v.Scope == "session" {
				ans = optAllowAlways
			}
		case event.ApprovalDenied:
			if v.Tool == tool && v.Scope == "session" {
				ans = optRejectAlways
			}
		}
	}
	return ans
}
