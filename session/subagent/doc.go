// Package subagent is the task tool: it hands a piece of work to a child
// session and returns the child's answer as the call's result.
//
// A subagent is a child session started by the task tool: a row with
// parent_id, its own log and window, the parent's model and workspace, and
// a tool set no wider than the parent's mode (read-only unless the call
// names more). It runs inside the task call, on the parent's turn: the
// parent's cancel reaches it, its questions go to the editor through the
// parent, and only its final answer comes back, capped, as the call's
// result. subagent_started (committed before the child exists) and
// subagent_finished in the parent's log link the two.
//
// The package knows the parent session only through Parent, which package
// session provides; sessions, leases and turns stay there.
package subagent
