package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/tools"
)

// A process can die anywhere in a turn. When a session is next opened, its
// log says how far the turn got, and recovery finishes what is safe to
// finish without blindly repeating anything:
//
//   - a call that started and has no result: reads re-run; edits compare
//     the file's hash with the hashes recorded in tool_started (already
//     applied → record it; untouched → apply; changed by someone else →
//     report the conflict); commands are recorded as "outcome unknown" for
//     the model to decide;
//   - a call that was approved but never started runs (nothing of it has
//     happened yet, and the user said yes);
//   - a call never reached is recorded as not run;
//   - a question the user never answered is asked again once the editor
//     has the session (AskPending), and the call then runs or is declined;
//     in a subagent's session, which no one will open to answer, it is
//     recorded as not run;
//   - a task call (a subagent) is never run again: the child's log is
//     recovered by these same rules and says how far it got, and the call's
//     result is the child's answer if it had finished, or else what it
//     had said, its calls and a mark that a restart cut it short;
//   - an MCP call is a command unless its tool is annotated read-only,
//     and a read-only one re-runs only if its server is connected again
//     (the editor names the servers when it loads the session).
//
// The turn is then closed. bridle never restarts a turn on its own: the
// model is not called again until the editor sends a prompt.

// callState is what the log says about one call of an unfinished turn.
type callState struct {
	key     string
	call    event.ToolCall
	started *event.ToolStarted
	asked   bool
	// request is the question as recorded: asked again, it keeps its
	// scope and words (a question about running without the sandbox
	// covers every command, not this one).
	request  event.ApprovalRequest
	answered bool
	granted  bool
	result   bool
}

// unfinished returns the calls of the log's last turn if that turn never
// finished, and whether it is unfinished at all.
func unfinished(sessionID string, events []event.Event) ([]*callState, bool) {
	start := -1
	for i := len(events) - 1; i >= 0; i-- {
		f := events[i].Kind().Facts()
		if f.ClosesTurn {
			return nil, false
		}
		if f.OpensTurn {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, false
	}
	var calls []*callState
	byKey := map[string]*callState{}
	for _, e := range events[start:] {
		switch v := e.Payload.(type) {
		case event.AssistantMessage:
			calls = nil
			for i, c := range v.ToolCalls {
				cs := &callState{key: callKey(sessionID, e.Seq, i), call: c}
				calls = append(calls, cs)
				byKey[cs.key] = cs
			}
		case event.ApprovalRequest:
			if cs := byKey[v.Key]; cs != nil {
				cs.asked, cs.request = true, v
			}
		case event.ApprovalGranted:
			if cs := byKey[v.Key]; cs != nil {
				cs.answered, cs.granted = true, true
			}
		case event.ApprovalDenied:
			if cs := byKey[v.Key]; cs != nil {
				cs.answered = true
			}
		case event.ToolStarted:
			if cs := byKey[v.Key]; cs != nil {
				st := v
				cs.started = &st
			}
		case event.ToolResult:
			if cs := byKey[v.Key]; cs != nil {
				cs.result = true
			}
		}
	}
	return calls, true
}

// cut is why a turn was cut short, in the words its recovery records.
type cut struct {
	// reason is the interrupted event's.
	reason string
	// Results, for a call that: started and is read-only (prefix to the
	// new output); started, an unknown tool (%s: its name); an edit whose
	// file cannot be read (%s, %v); an edit found applied (%s), applied
	// now (prefix), found changed by someone else (%s); a command (or any
	// other call with effects); approved, but its tool is gone (%s);
	// never reached; asked but never answered.
	rerun, unknownTool, editUnreadable, editApplied, editApplying, editConflict string
	unknown, approvedGone, notRun, notAnswered                                  string
}

// restarted: the process died (a crash, a kill, a power cut).
var restarted = &cut{
	reason:         "restart",
	rerun:          "(run again after a restart)\n",
	unknownTool:    "outcome unknown: bridle restarted while %s ran, and no longer offers that tool",
	editUnreadable: "outcome unknown: bridle restarted during this edit and cannot read %s now: %v",
	editApplied:    "%s was edited (the edit was applied before bridle restarted)",
	editApplying:   "(applied after a restart)\n",
	editConflict:   "not applied: %s changed after this edit was planned and before bridle restarted; read it again and redo the edit if it is still wanted",
	unknown:        "outcome unknown: interrupted by a restart while running. It may have run in part or in full; check its effects before running it again.",
	approvedGone:   "not run: approved, but bridle restarted before it ran and no longer offers %s",
	notRun:         "not run: bridle restarted before this call ran",
	notAnswered:    "not run: bridle restarted before the user answered whether it may run",
}

// unrecorded: the process lived, but a commit failed (a full disk, a
// read-only database) and the turn stopped there.
var unrecorded = &cut{
	reason:         "write_failed",
	rerun:          "(run again: bridle could not record its first result, its log could not be written)\n",
	unknownTool:    "outcome unknown: bridle could not record the result of %s (its log could not be written) and no longer offers that tool",
	editUnreadable: "outcome unknown: bridle could not record this edit's result (its log could not be written) and cannot read %s now: %v",
	editApplied:    "%s was edited (the edit was applied; bridle could not record it then, its log could not be written)",
	editApplying:   "(applied late: bridle's log could not be written when it was due)\n",
	editConflict:   "not applied: %s changed after this edit was planned, while bridle could not write its log; read it again and redo the edit if it is still wanted",
	unknown:        "outcome unknown: it ran, but bridle could not record its result because its log could not be written (a full disk?). It may have run in part or in full; check its effects before running it again.",
	approvedGone:   "not run: approved, but bridle's log could not be written before it ran, and %s is no longer offered",
	notRun:         "not run: the turn stopped before this call because bridle's log could not be written",
	notAnswered:    "not run: the turn stopped before the user answered, because bridle's log could not be written",
}

// recover finishes what a dead process left of the session's last turn,
// except questions, which wait for AskPending. It runs before the session
// is live, so nothing else touches it.
func (s *Session) recover(ctx context.Context) error { return s.recoverCut(ctx, restarted) }

// recoverCut finishes the last turn, if it never finished, in the words of
// why it was cut short; see recover.
func (s *Session) recoverCut(ctx context.Context, why *cut) error {
	calls, open := unfinished(s.row.ID, s.Events())
	if !open {
		return nil
	}
	s.m.log.Info("recovering a turn cut short", "session", s.row.ID, "reason", why.reason)
	top := s.Info().ParentID == ""
	// A call settled by running a tool (a read run again, an edit applied,
	// a subagent's reads) shows the model text redacted with the
	// workspace's .env files, as a turn's calls do. A session being
	// opened is recovered on the connection's read loop, before
	// session/load is answered: it does not wait for their list. Unless
	// the watcher has it already, those calls wait for AskPending, which
	// waits for it as a turn does. A subagent's session recovered by its
	// parent's call (s.parent) waits: that call runs where the list was
	// found, or in AskPending. Without the list, its calls are not run.
	var wait bool
	var secErr error
	if s.parent == nil {
		wait = !s.secretsKnown(ctx)
	} else if err := s.syncSecrets(ctx); ctx.Err() != nil {
		return ctx.Err()
	} else {
		secErr = err
	}
	t := &turn{s: s}
	pending := false
	// Files the editor holds are read through it, which cannot answer
	// while it waits for the session (this runs before session/load is
	// answered, on the connection's read loop): calls that need files
	// wait for AskPending, as questions do.
	deferFiles := s.buffered() && top
	for _, cs := range calls {
		switch {
		case cs.result:
		case cs.started != nil:
			// A call whose input was redacted is not run again (redactedInput).
			if deferFiles && s.needsFiles(cs.started.Name) || wait && !cs.started.Redacted && s.showsFiles(cs.started.Name) {
				pending = true
				continue
			}
			if err := t.result(ctx, cs.key, s.resolveStarted(ctx, cs, why, secErr)); err != nil {
				return err
			}
		case cs.granted && cs.call.Redacted:
			if err := t.result(ctx, cs.key, redactedInput(event.ToolResult{CallID: cs.call.ID, Name: cs.call.Name}, "cancelled", "not run")); err != nil {
				return err
			}
		case cs.granted && (deferFiles || wait):
			pending = true
		case cs.granted && secErr != nil:
			if err := t.result(ctx, cs.key, notRun(cs.key, cs.call.ID, cs.call.Name, secErr)); err != nil {
				return err
			}
		case cs.granted:
			tool := s.tool(cs.call.Name)
			if tool == nil {
				if err := t.result(ctx, cs.key, event.ToolResult{CallID: cs.call.ID, Name: cs.call.Name, IsError: true, Status: "unavailable",
					Output: fmt.Sprintf(why.approvedGone, cs.call.Name)}); err != nil {
					return err
				}
				continue
			}
			c := toProviderCall(cs.call)
			// Its PreToolUse hooks ran before the question: recorded,
			// they are not run again.
			if denied, err := t.preToolHooks(ctx, cs.key, c); err != nil || denied {
				if err != nil {
					return err
				}
				continue
			}
			if err := t.execute(ctx, cs.key, c, tools.CallOf(tool, c.Input), false); err != nil {
				return err
			}
		case cs.asked && !cs.answered && top:
			pending = true
		default:
			out := why.notRun
			if cs.asked && !cs.answered {
				out = why.notAnswered
			}
			if err := t.result(ctx, cs.key, event.ToolResult{CallID: cs.call.ID, Name: cs.call.Name, IsError: true, Status: "cancelled",
				Output: out}); err != nil {
				return err
			}
		}
	}
	if pending {
		s.mu.Lock()
		s.pending, s.pendingWhy = true, why // AskPending closes the turn once answered
		s.mu.Unlock()
		return nil
	}
	_, err := s.append(ctx, event.Interrupted{Reason: why.reason}, event.TurnFinished{StopReason: "interrupted"})
	return err
}

// resolveStarted decides the result of a call that started but whose
// result was never recorded.
// secErr, if not nil, says the workspace's .env files are not known: a
// call that would show the model what a tool read is not run.
func (s *Session) resolveStarted(ctx context.Context, cs *callState, why *cut, secErr error) event.ToolResult {
	st := cs.started
	r := event.ToolResult{CallID: st.CallID, Key: cs.key, Name: st.Name}
	tool := s.tool(st.Name)
	if tool == nil {
		r.IsError, r.Status = true, "unknown"
		r.Output = fmt.Sprintf(why.unknownTool, st.Name)
		return r
	}
	if cr, ok := tool.(childRunner); ok {
		return cr.Resolve(ctx, st.CallID, cs.key)
	}
	env := s.env(cs.key)
	// Recovery runs while the editor waits for the load's answer: no
	// language server is asked (nor started) for an edit it applies.
	env.Code = nil
	switch tool.Effect() {
	case permission.EffectNone, permission.EffectRead:
		if st.Redacted {
			return redactedInput(r, "failed", "not run")
		}
		if secErr != nil {
			return notRun(cs.key, st.CallID, st.Name, secErr)
		}
		res := runTool(ctx, tool, env, st.Input)
		r = resultOf(st.CallID, cs.key, st.Name, res, ctx)
		r.Output = why.rerun + r.Output
		return r
	case permission.EffectEdit:
		if st.AfterHash == "" && st.BeforeHash == "" {
			break
		}
		now, err := tools.HashFile(ctx, env, st.Path)
		if err == nil && now == "" && st.BeforeHash == "" {
			// A file this write created through an editor that does not
			// save it is only in the editor's buffer: applied all the same.
			if h, ok := tools.HashUnsaved(ctx, env, st.Path); ok {
				now = h
			}
		}
		switch {
		case err != nil:
			r.IsError, r.Status = true, "unknown"
			r.Output = fmt.Sprintf(why.editUnreadable, st.Path, err)
		case now == st.AfterHash:
			r.Status = "completed"
			r.Output = fmt.Sprintf(why.editApplied, st.Path)
			r.Locations = []string{st.Path}
		case now == st.BeforeHash && st.Redacted:
			r = redactedInput(r, "failed", "not applied")
		case now == st.BeforeHash && secErr != nil:
			r = notRun(cs.key, st.CallID, st.Name, secErr)
		case now == st.BeforeHash:
			res := runTool(ctx, tool, env, st.Input)
			r = resultOf(st.CallID, cs.key, st.Name, res, ctx)
			r.Output = why.editApplying + r.Output
		default:
			r.IsError, r.Status = true, "failed"
			r.Output = fmt.Sprintf(why.editConflict, st.Path)
		}
		return r
	}
	r.IsError, r.Status = true, "unknown"
	r.Output = why.unknown
	return r
}

// AskPending asks again the questions a dead process left unanswered, and
// closes the recovered turn. The editor calls it (through rpc) once it has
// the session; a prompt sent meanwhile withdraws the questions.
func (s *Session) AskPending(ctx context.Context) {
	s.mu.Lock()
	if !s.pending && !s.rewindPending || s.cancel != nil {
		s.mu.Unlock()
		return
	}
	questions, rewind := s.pending, s.rewindPending
	s.pending, s.rewindPending = false, false
	why := s.pendingWhy
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.cancel, s.done, s.recovering = cancel, done, true
	s.mu.Unlock()
	go func() {
		defer func() {
			cancel()
			s.mu.Lock()
			s.cancel, s.done, s.recovering = nil, nil, false
			s.mu.Unlock()
			close(done)
		}()
		if rewind {
			// Finished here rather than while the session was opened: its
			// files are the editor's. A prompt that withdraws this finishes
			// it in its own turn, before anything else (turn.loop).
			if err := s.finishRewind(ctx); err != nil {
				if ctx.Err() != nil {
					s.mu.Lock()
					s.rewindPending = true
					s.mu.Unlock()
				} else {
					s.m.log.Error("finishing a rewind failed", "session", s.row.ID, "err", err)
				}
			}
		}
		if !questions {
			return
		}
		t := &turn{s: s}
		// The calls run here show the model what tools read: they wait
		// for the workspace's .env files, as a turn's calls do, and are
		// not run without them. A prompt meanwhile withdraws the wait.
		secErr := s.syncSecrets(ctx)
		if ctx.Err() != nil {
			secErr = nil // each call below records its withdrawal
		}
		calls, _ := unfinished(s.row.ID, s.Events())
		for _, cs := range calls {
			if cs.result {
				continue
			}
			if cs.started != nil || cs.granted {
				// Deferred by recoverCut: its files are the editor's, or
				// the .env files were not known yet.
				if err := t.recoverDeferred(ctx, cs, why, secErr); err != nil {
					s.m.log.Error("recovering a call failed", "session", s.row.ID, "err", err)
					return
				}
				continue
			}
			if !cs.asked || cs.answered {
				continue
			}
			c := toProviderCall(cs.call)
			if ctx.Err() != nil {
				t.cancelCall(cs.key, c)
				continue
			}
			if cs.call.Redacted {
				t.tail = append(t.tail, redactedInput(event.ToolResult{CallID: c.ID, Key: cs.key, Name: c.Name}, "cancelled", "not run"))
				continue
			}
			tool := s.tool(c.Name)
			if tool == nil {
				t.tail = append(t.tail, event.ToolResult{CallID: c.ID, Key: cs.key, Name: c.Name, IsError: true, Status: "unavailable",
					Output: fmt.Sprintf("tool %q is no longer offered", c.Name)})
				continue
			}
			if secErr != nil {
				t.tail = append(t.tail, notRun(cs.key, c.ID, c.Name, secErr))
				continue
			}
			env := s.callEnv(cs.key)
			p, err := tool.Preview(ctx, env, c.Input)
			if err != nil {
				// Recorded with the turn's end, not by t.result: its
				// text may quote the input.
				t.tail = append(t.tail, event.ToolResult{CallID: c.ID, Key: cs.key, Name: c.Name, IsError: true, Status: "failed",
					Output: s.redactor().Redact(err.Error())})
				continue
			}
			sc, summary := s.scopeOf(p), summaryOf(p)
			if cs.request.Pattern == "*" && p.Command != "" {
				sc = permission.Scope{Pattern: "*", Label: unconfinedLabel, Command: p.Command}
			}
			if cs.request.Summary != "" {
				summary = cs.request.Summary
			}
			ok, err := t.ask(ctx, cs.key, c, p, sc, summary)
			if err != nil {
				s.m.log.Error("recovering a question failed", "session", s.row.ID, "err", err)
				return
			}
			if ok {
				if err := t.execute(ctx, cs.key, c, tools.CallOf(tool, c.Input), false); err != nil {
					s.m.log.Error("recovering a call failed", "session", s.row.ID, "err", err)
					return
				}
			}
		}
		t.tail = append(t.tail, event.Interrupted{Reason: why.reason})
		if _, err := t.finish(ctx, "interrupted", nil); err != nil {
			s.m.log.Error("closing a recovered turn failed", "session", s.row.ID, "err", err)
		}
	}()
}

// buffered says whether the session's files are read and written through
// the editor.
func (s *Session) buffered() bool { return s.box.UsesEditor() }

// needsFiles says whether settling a started call of tool reads files:
// a read is run again, an edit's file is hashed.
func (s *Session) needsFiles(tool string) bool {
	t := s.tool(tool)
	return t != nil && (t.Effect() == permission.EffectRead || t.Effect() == permission.EffectEdit)
}

// rerunWithdrawn is the result of a read, cut short, whose run again was
// withdrawn (by a prompt, or bridle shutting down) before it ran.
const rerunWithdrawn = "not run again: it was cut short, and a new prompt (or bridle's shutdown) came before it could run again; make the call again if it is still needed"

// recoverDeferred settles a call recoverCut left for the editor: a
// started one as recovery would have, an approved one by running it. A
// prompt that withdraws the recovery (ctx cancelled) leaves the editor
// unasked: a started edit's outcome is then unknown, never applied twice,
// and a started read is not run again.
// secErr is resolveStarted's.
func (t *turn) recoverDeferred(ctx context.Context, cs *callState, why *cut, secErr error) error {
	s := t.s
	c := toProviderCall(cs.call)
	if ctx.Err() != nil {
		if cs.started == nil {
			t.cancelCall(cs.key, c)
			return nil
		}
		if tool := s.tool(c.Name); tool != nil && tool.Effect() <= permission.EffectRead && !runsChild(tool) {
			// A read has no effect to be unsure of.
			return t.result(context.WithoutCancel(ctx), cs.key, event.ToolResult{CallID: c.ID, Key: cs.key, Name: c.Name, IsError: true,
				Status: "cancelled", Output: rerunWithdrawn})
		}
		return t.result(context.WithoutCancel(ctx), cs.key, event.ToolResult{CallID: c.ID, Key: cs.key, Name: c.Name, IsError: true,
			Status: "unknown", Output: why.unknown})
	}
	if cs.started != nil {
		return t.result(ctx, cs.key, s.resolveStarted(ctx, cs, why, secErr))
	}
	if cs.call.Redacted {
		return t.result(ctx, cs.key, redactedInput(event.ToolResult{CallID: c.ID, Name: c.Name}, "cancelled", "not run"))
	}
	tool := s.tool(c.Name)
	if tool == nil {
		return t.result(ctx, cs.key, event.ToolResult{CallID: c.ID, Key: cs.key, Name: c.Name, IsError: true, Status: "unavailable",
			Output: fmt.Sprintf(why.approvedGone, c.Name)})
	}
	if secErr != nil {
		return t.result(ctx, cs.key, notRun(cs.key, c.ID, c.Name, secErr))
	}
	return t.execute(ctx, cs.key, c, tools.CallOf(tool, c.Input), false)
}

// showsFiles says whether settling a started call of tool may show the
// model what is in the workspace: a read or a subagent run again, an
// edit's diff. A command's outcome is unknown; its settling runs nothing.
func (s *Session) showsFiles(tool string) bool {
	t := s.tool(tool)
	return t != nil && t.Effect() != permission.EffectExecute
}

// notRun is the result of a call not run because the workspace's .env
// files are not known (secErr, from syncSecrets): the model can make the
// call again.
func notRun(key, callID, name string, secErr error) event.ToolResult {
	return event.ToolResult{CallID: callID, Key: key, Name: name, IsError: true, Status: "failed", Output: "Not run: " + secErr.Error()}
}

// redactedInput is r as the result of a call that recovery would run
// (or apply) from the log, but whose recorded input had secrets taken
// out: run with it, the call would do something else than the model
// asked. what says what was not done ("not run", "not applied").
func redactedInput(r event.ToolResult, status, what string) event.ToolResult {
	r.IsError, r.Status = true, status
	r.Output = what + ": its input held a secret, which the log does not keep (it was redacted), so bridle did not run it again after the restart: make the call again if it is still wanted"
	return r
}

func toProviderCall(c event.ToolCall) provider.ToolCall {
	return provider.ToolCall{ID: c.ID, Name: c.Name, Input: json.RawMessage(c.Input)}
}
