package session

import (
	"context"

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
	tool, err := t.reg.Lookup(c.Name)
	if err != nil {
		return t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "unavailable", Output: err.Error()})
	}
	// Arguments that do not match the schema are the model's to fix: an
	// error result it can read, never a crash.
	if err := t.reg.Check(tool, c.Input); err != nil {
		return t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "failed", Output: err.Error()})
	}
	env := s.env(key)
	preview, err := tool.Preview(env, c.Input)
	if err != nil {
		return t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "failed", Output: err.Error()})
	}
	if t.reg.Decide(tool) == sandbox.Ask {
		granted, err := t.approve(ctx, key, c, preview)
		if err != nil {
			return err
		}
		if !granted {
			return nil
		}
	}
	started := event.ToolStarted{CallID: c.ID, Key: key, Name: c.Name, Input: c.Input}
	if p, ok := tool.(sandbox.Planner); ok {
		// The file's hashes before and after, so that a restart can tell
		// whether the edit already landed.
		if fe, err := p.Plan(env, c.Input); err == nil {
			started.Path, started.BeforeHash, started.AfterHash = fe.Path, fe.Before, fe.After
		}
	}
	evs, err := s.append(ctx, started)
	if err != nil {
		return err
	}
	for _, u := range s.replayer().updates(evs[0]) {
		s.send(ctx, u)
	}
	res := tool.Run(ctx, env, c.Input)
	s.m.cfg.Fault.toolRan()
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
	if err := t.result(ctx, key, r); err != nil {
		return err
	}
	if res.Pin != nil && !res.IsError {
		return t.pinFromModel(ctx, *res.Pin)
	}
	return nil
}

// pinFromModel records what the remember tool pinned.
func (t *turn) pinFromModel(ctx context.Context, p sandbox.Pin) error {
	var ev event.Payload = event.ConstraintPinned{Text: p.Text, Source: "model"}
	if p.Kind == sandbox.PinDecision {
		ev = event.DecisionRecorded{Text: p.Text, Source: "model"}
	}
	evs, err := t.s.append(ctx, ev)
	if err != nil {
		return err
	}
	for _, u := range t.s.replayer().updates(evs[0]) {
		t.s.send(ctx, u)
	}
	return nil
}

// cancelCall closes a call that will not run because the turn was
// cancelled. The result is committed with the turn's end.
func (t *turn) cancelCall(seq int64, i int, c provider.ToolCall) {
	key := callKey(t.s.row.ID, seq, i)
	t.tail = append(t.tail, event.ToolResult{CallID: c.ID, Key: key, Name: c.Name, IsError: true, Status: "cancelled",
		Output: contextwin.CancelledResult})
}

func (t *turn) result(ctx context.Context, key string, r event.ToolResult) error {
	r.Key = key
	// Cut at the source, before the result is counted: one output may
	// never carry the window past both thresholds at once.
	r = t.s.m.cfg.Window.CutOutput(t.s.Info().Model, r)
	evs, err := t.s.append(ctx, r)
	if err != nil {
		return err
	}
	for _, u := range t.s.replayer().updates(evs[0]) {
		t.s.send(ctx, u)
	}
	return nil
}
