package session

import (
	"context"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/session/replay"
	"github.com/bridle-dev/bridle/tools"
)

// A call the user may run goes through a short chain of steps
// (callSteps), each doing its part around the steps after it; the tool
// runs after the last. What every call needs done around its run (a
// checkpoint, the output cache, a fault for the crash tests) is a step
// of the list, so a new concern joins the list and execute stays as it
// is; what differs per tool a step reads from the call (tools.Call: its
// plan, whether it is cacheable, whether the box watches its writes),
// set by the tools package as it prepares and runs it, or asks of the
// tool's session-side role (childRunner).

// callRun is one call on its way through the steps.
type callRun struct {
	t    *turn
	ctx  context.Context
	key  string
	c    provider.ToolCall
	call *tools.Call
	env  *tools.Env

	// started is what tool_started records.
	started event.ToolStarted
	// tool runs the tool (tools.Call.Run's): what the last step wraps.
	tool func() tools.Result

	// steps are those not run yet; rest is next, made once.
	steps []step
	rest  func() error

	// What the run produced, for the call's result.
	res       tools.Result
	seen      []event.FileSeen
	cached    bool
	changed   []event.FileChange
	unscanned string
}

// A step does its part of call x around next, the steps after it (and
// the tool). It returns an error only when the log cannot be written;
// a step that settles the call itself (an edit that cannot apply)
// records its result and does not call next.
type step func(x *callRun, next func() error) error

// callSteps are the steps of every call, in order, once tools.Call.Run
// has planned it: keep an edit's file for a rewind, record tool_started,
// record the result (once what follows is done), record what a command
// changes, the fault of the crash tests, the output cache.
func callSteps() []step {
	return []step{keepStep, startStep, resultStep, recordStep, faultStep, cacheStep}
}

// through runs x through steps, then the tool.
func (x *callRun) through(steps []step) error {
	x.steps = steps
	x.rest = x.next
	return x.next()
}

// next runs the steps not run yet, then the tool.
func (x *callRun) next() error {
	if len(x.steps) == 0 {
		return x.run()
	}
	st := x.steps[0]
	x.steps = x.steps[1:]
	return st(x, x.rest)
}

// run runs the tool: what the last step wraps.
func (x *callRun) run() error {
	x.res = runGuarded(x.ctx, x.call.Name, x.tool)
	return nil
}

// failed settles the call with an error result the model reads.
func (x *callRun) failed(err error) error {
	return x.t.result(x.ctx, x.key, event.ToolResult{CallID: x.c.ID, Name: x.c.Name, IsError: true, Status: "failed", Output: err.Error()})
}

// startStep records tool_started, with the held answer, before the tool
// runs: with an edit's file's hashes (tools.Call.Plan), so that a
// restart can tell whether it landed. A command's output then reaches
// the editor as it comes (the result that follows replaces it).
func startStep(x *callRun, next func() error) error {
	s := x.t.s
	if fe := x.call.Plan; fe != nil {
		x.started.Path, x.started.BeforeHash, x.started.AfterHash = fe.Path, fe.Before, fe.After
	}
	if _, err := s.commit(x.ctx, nil, x.started); err != nil {
		return err
	}
	x.env.Live = func(tail string) {
		s.send(x.ctx, replay.CallUpdate(acp.ToolCallUpdate{ToolCallID: toolCallID(x.key), Content: replay.Output(tail, true)}))
	}
	return next()
}

// resultStep records the call's result once the steps after it are
// done, with its idempotency record, and what the tool set: the files
// the model now knows, a pin, a plan.
func resultStep(x *callRun, next func() error) error {
	if err := next(); err != nil {
		return err
	}
	t, s := x.t, x.t.s
	r := resultOf(x.c.ID, x.key, x.c.Name, x.res, x.ctx)
	r.Cached, r.Seen = x.cached, x.seen
	r.Changed, r.Unscanned = x.changed, x.unscanned
	record := t.result
	if x.res.Redacted {
		record = t.record // the tool redacted its output, errors too
	}
	if err := record(x.ctx, x.key, r); err != nil {
		return err
	}
	if s.parent == nil {
		// A child's reads are in its own window, not its parent's: the
		// parent is never told "you read it".
		s.files().saw(x.seen, t.promptNumber(), s.root.Show)
	}
	if x.res.Pin != nil && !x.res.IsError {
		return t.pinFromModel(x.ctx, *x.res.Pin)
	}
	if x.res.PlanSet && !x.res.IsError {
		return t.planFromModel(x.ctx, x.res.Plan)
	}
	return nil
}

// faultStep is where BRIDLE_FAULT=tool:N stops the process: after the
// tool's side effect, before its result is recorded.
func faultStep(x *callRun, next func() error) error {
	err := next()
	x.t.s.m.cfg.Fault.toolRan()
	return err
}
