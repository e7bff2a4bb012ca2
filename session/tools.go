package session

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/session/replay"
	"github.com/bridle-dev/bridle/tools"
	"github.com/bridle-dev/bridle/tools/mcp"
)

// callKey is the idempotency key of call index i of the assistant event at
// seq: the same on the first run and on every replay.
func callKey(sessionID string, seq int64, i int) string { return event.NewCallKey(sessionID, seq, i) }

// toolCallID is the id the editor knows a call by, derived from its key.
func toolCallID(key string) string { return event.ToolCallID(key) }

// runCall runs call index i of the assistant event at seq: the registry
// prepares it (tools.Registry.Prepare: the tool the mode offers, its
// input checked, the mode's verdict, its preview), the user is asked if
// need be, then it is executed.
func (t *turn) runCall(ctx context.Context, seq int64, i int, c provider.ToolCall) error {
	s := t.s
	key := callKey(s.row.ID, seq, i)
	defer s.endCall(key)
	call, err := t.reg.Prepare(ctx, c.Name, c.Input, func() (*tools.Env, error) {
		// The preview the user may be shown is redacted with every .env
		// file made before the call; execute looks again before it runs.
		if settled, err := t.syncForCall(ctx, key, c); settled {
			return nil, settledCall{err}
		}
		env := s.callEnv(key)
		// An edit that waits for a command of another session before it
		// asks the editor says so on its card. The card comes with the
		// answer, which may still be held (it is written with the call's
		// start): written and shown first.
		env.Waiting = func(note string) {
			if err := s.flush(ctx); err != nil {
				return // the turn stops with the error at its next commit
			}
			s.send(ctx, replay.CallUpdate(acp.ToolCallUpdate{ToolCallID: toolCallID(key), Content: replay.Output(note, false)}))
		}
		return env, nil
	})
	var settled settledCall
	switch {
	case errors.As(err, &settled):
		return settled.err
	case errors.Is(err, tools.ErrNotOffered):
		msg := err.Error()
		if mcp.IsToolName(c.Name) && s.tool(c.Name) == nil {
			// Not a question of mode: the server is gone or never had it.
			msg = s.mcpSet().Why(c.Name)
		}
		return t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "unavailable", Output: msg})
	case err != nil:
		// Arguments that do not match the schema are the model's to fix:
		// an error result it can read, never a crash.
		return t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "failed", Output: err.Error()})
	}
	if denied, err := t.preToolHooks(ctx, key, c); err != nil || denied {
		return err
	}
	granted, asked, err := t.approve(ctx, key, c, call)
	if err != nil || !granted {
		return err
	}
	return t.execute(ctx, key, c, call, !asked)
}

// settledCall is how runCall's Env tells Prepare that the call is
// settled already (syncForCall): err is the settling's.
type settledCall struct{ err error }

func (settledCall) Error() string { return "the call is settled" }

// execute runs a call the user may run (tools.Call.Run) through the
// steps of every call (callSteps): tool_started is recorded (with the
// file hashes an edit will change, so a restart can tell whether it
// landed), the tool runs, and its result is recorded together with the
// call's idempotency record. An edit that cannot apply (its text not
// found, not unique…) is settled before: nothing happens, and the model
// reads why. The caller passes the call as it checked it: an MCP
// server's tools can vanish meanwhile, and the call then still reaches
// the tool, which says its server is gone.
//
// The .env files are synced again first unless synced says they were
// for this call and nothing waited since: the user may take minutes to
// answer a question, and a recovered call is asked, or run, long after
// its turn began. The call's Env (Session.callEnv), shared with its
// Preview, is then the one with the redactor that knows them.
func (t *turn) execute(ctx context.Context, key string, c provider.ToolCall, call *tools.Call, synced bool) error {
	if !synced {
		if settled, err := t.syncForCall(ctx, key, c); settled {
			return err
		}
	}
	x := &callRun{t: t, ctx: ctx, key: key, c: c, call: call, env: t.s.callEnv(key)}
	x.started = event.ToolStarted{CallID: c.ID, Key: key, Name: c.Name}
	x.started.Input, x.started.Redacted = t.s.recordedInput(key, c)
	err := call.Run(ctx, x.env, func(run func() tools.Result) error {
		x.tool = run
		return x.through(callSteps())
	})
	if errors.Is(err, tools.ErrNotApplied) {
		return x.failed(err)
	}
	return err
}

// promptNumber is the prompt this turn answers, counted from 1. A turn
// answers one prompt, so it is counted once.
func (t *turn) promptNumber() int {
	if t.prompt == 0 {
		for _, e := range t.s.Events() {
			if e.Kind().Facts().OpensTurn {
				t.prompt++
			}
		}
	}
	return t.prompt
}

// noteChanges appends a file_changed event for each file the model saw
// that changed on disk since, so that the next request says so.
func (t *turn) noteChanges(ctx context.Context) error {
	s := t.s
	if s.parent != nil {
		return nil // a child lives for one task call: notes are for the parent's window
	}
	var evs []event.Payload
	for _, c := range s.files().check() {
		evs = append(evs, c)
	}
	if len(evs) == 0 {
		return nil
	}
	_, err := s.append(ctx, evs...)
	return err
}

// resultOf turns what a tool returned into its result event.
func resultOf(callID, key, name string, res tools.Result, ctx context.Context) event.ToolResult {
	r := event.ToolResult{CallID: callID, Key: key, Name: name, Output: res.Output, IsError: res.IsError, Status: "completed",
		Artifact: res.Artifact, Lines: res.Lines, Bytes: res.Bytes, Background: res.Background}
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
	return r
}

// pinFromModel records what the remember tool pinned.
func (t *turn) pinFromModel(ctx context.Context, p tools.Pin) error {
	var ev event.Payload = event.ConstraintPinned{Text: p.Text, Source: "model"}
	if p.Kind == tools.PinDecision {
		ev = event.DecisionRecorded{Text: p.Text, Source: "model"}
	}
	_, err := t.s.commit(ctx, nil, ev)
	return err
}

// planFromModel records the plan the plan tool set; its commit shows it
// to the editor as an ACP plan.
func (t *turn) planFromModel(ctx context.Context, steps []tools.PlanStep) error {
	entries := make([]event.PlanEntry, len(steps))
	for i, st := range steps {
		entries[i] = event.PlanEntry{Content: st.Content, Status: st.Status}
	}
	_, err := t.s.commit(ctx, nil, event.PlanUpdated{Entries: entries})
	return err
}

// currentPlan is the latest plan in a log, if any.
func currentPlan(events []event.Event) (event.PlanUpdated, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if p, ok := events[i].Payload.(event.PlanUpdated); ok {
			return p, true
		}
	}
	return event.PlanUpdated{}, false
}

// tool returns one of the session's tools by name, whatever the mode, or
// nil.
func (s *Session) tool(name string) tools.Tool {
	for _, t := range s.tools() {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

func summaryOf(p tools.Preview) string {
	if p.Command != "" {
		return p.Command
	}
	return p.Title
}

// syncForCall brings the session's redactor up to date with the .env
// files before call c goes on (syncSecrets). A call is not run while
// their list is not known: then it is settled, cancelled or with a result
// saying why, and settled is true.
func (t *turn) syncForCall(ctx context.Context, key string, c provider.ToolCall) (settled bool, err error) {
	if err := t.s.syncSecrets(ctx); ctx.Err() != nil {
		t.cancelCall(key, c)
		return true, nil
	} else if err != nil {
		return true, t.result(ctx, key, notRun(key, c.ID, c.Name, err))
	}
	return false, nil
}

// cancelCall closes a call that will not run because the turn was
// cancelled. The result is committed with the turn's end.
func (t *turn) cancelCall(key string, c provider.ToolCall) {
	t.tail = append(t.tail, event.ToolResult{CallID: c.ID, Key: key, Name: c.Name, IsError: true, Status: "cancelled",
		Output: contextwin.CancelledResult})
}

// result records a call's result. An error's text is redacted here, once:
// the session's own quote the call's input or an error (the editor's, a
// server's), and so do a tool's made by tools.Errorf. A tool's output
// is redacted by the tool; execute records one that says so
// (tools.Result.Redacted) with record.
func (t *turn) result(ctx context.Context, key string, r event.ToolResult) error {
	if r.IsError || r.Status != "completed" {
		r.Output = t.s.redactor().Redact(r.Output)
	}
	return t.record(ctx, key, r)
}

// record holds a call's result, its texts redacted already.
func (t *turn) record(ctx context.Context, key string, r event.ToolResult) error {
	r.Key = key
	if r.Status != "denied" && r.Status != "cancelled" {
		if err := t.postToolHooks(ctx, key, &r); err != nil {
			return err
		}
	}
	// Cut at the source, before the result is counted: one output may
	// never carry the window past both thresholds at once.
	info := t.s.Info()
	ratio := t.s.memo.Ratio()
	if !t.s.memo.Measured() {
		if seed := t.s.seedRatio(info.Model); seed > 0 {
			ratio = seed
		}
	}
	r, n := t.s.m.window(info.Cwd).CutOutput(info.Model, r, ratio, func(whole string) string { return t.s.keepOutput(key, whole) })
	// Held: written with the next commit, in the same transaction as its
	// idempotency record; in a loop that goes on, that is the next
	// request's context_assembled, so the iteration costs two commits.
	// A crash before it leaves tool_started without a result, which
	// recovery resolves as it does a crash inside the tool.
	_, err := t.s.holdCounted(r, n)
	return err
}

// recordedInput is the input of call key (c, as the model wrote it) as
// its assistant message recorded it, redacted, and whether redaction
// changed it: what tool_started keeps, the permission question and the
// cards show (see redact.go). Should the log not hold the call, c's is
// redacted here.
func (s *Session) recordedInput(key string, c provider.ToolCall) (json.RawMessage, bool) {
	if seq, i, ok := event.ParseCallKey(key); ok {
		events := s.view()
		j := sort.Search(len(events), func(j int) bool { return events[j].Seq >= seq })
		if j < len(events) && events[j].Seq == seq {
			if a, ok := events[j].Payload.(event.AssistantMessage); ok && i < len(a.ToolCalls) && a.ToolCalls[i].ID == c.ID {
				return a.ToolCalls[i].Input, a.ToolCalls[i].Redacted
			}
		}
	}
	return s.redactor().RedactJSON(c.Input)
}
