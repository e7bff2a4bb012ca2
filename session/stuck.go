package session

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bridle-dev/bridle/tools"
)

// stopGrace is how long a cancelled tool may take to return on its own
// (a command is killed, an MCP call is cancelled) before the turn stops
// waiting for it.
const stopGrace = 2 * time.Second

// runTool runs tool, and returns when it does or, once ctx is done, after
// stopGrace at most. Every tool is meant to honour ctx, but one stuck in
// the kernel (a read of a hung network file system, a device) cannot; the
// turn, cancel, session/close and shutdown must not wait on it forever.
// The abandoned call keeps its goroutine until it returns; its outcome is
// unknown, and the result says so.
func runTool(ctx context.Context, tool tools.Tool, env *tools.Env, input json.RawMessage) tools.Result {
	return runGuarded(ctx, tool.Name(), func() tools.Result { return tool.Run(ctx, env, input) })
}

// runGuarded is runTool for run, a run of the tool named name that
// honours ctx as the tool does (tools.Call.Run's).
func runGuarded(ctx context.Context, name string, run func() tools.Result) tools.Result {
	done := make(chan tools.Result, 1)
	go func() { done <- run() }()
	select {
	case res := <-done:
		return res
	case <-ctx.Done():
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case res := <-done:
		return res
	case <-grace.C:
		return tools.Result{IsError: true, Output: "cancelled: " + name +
			" did not stop within " + stopGrace.String() + " of the cancel and was abandoned; what it did is unknown, so check before relying on it"}
	}
}
