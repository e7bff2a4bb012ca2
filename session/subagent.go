package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/session/event"
	"github.com/bridle-dev/bridle/store"
)

// A subagent is a child session started by the task tool: a row with
// parent_id, its own log and window, the parent's model and workspace, and
// a tool set no wider than the parent's mode (read-only unless the call
// names more). It runs inside the task call, on the parent's turn: the
// parent's cancel reaches it, its questions go to the editor through the
// parent, and only its final answer comes back, capped, as the call's
// result. subagent_started (committed before the child exists) and
// subagent_finished in the parent's log link the two.

const taskName = "task"

// Defaults and limits of a task call.
const (
	defaultTaskTurns  = 10
	defaultTaskTokens = 200_000
	minTaskTokens     = 1_000
)

// answerCaps bound the answer the parent reads; the rest is kept in the
// call's artifact (and the child's log).
var answerCaps = sandbox.Caps{HeadLines: 300, HeadBytes: 16 << 10, TailLines: 60, TailBytes: 4 << 10}

// childSystem is added to a subagent's system prompt.
const childSystem = `

You are a subagent: another agent gave you one task, and sees nothing of your work but your final message. Do the task with your tools, then end with a final message that is complete on its own: the answer, the facts found (paths, names, line numbers), what you changed if anything, and what is left undone. Do not ask questions: nobody can answer them.`

func (s *Session) system() string {
	if s.parent != nil || s.Info().ParentID != "" {
		return s.m.cfg.System + childSystem
	}
	return s.m.cfg.System
}

// taskTool starts a subagent. It is the parent session's: Run needs it.
type taskTool struct{ s *Session }

type taskInput struct {
	Description string   `json:"description"`
	Prompt      string   `json:"prompt"`
	Tools       []string `json:"tools,omitempty"`
	MaxTurns    int      `json:"max_turns,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
}

func (t *taskTool) Name() string { return taskName }

func (t *taskTool) Description() string {
	return fmt.Sprintf("Hand a self-contained piece of work to a subagent: a fresh session with its own context window that sees only your prompt "+
		"(not this conversation) and returns only its final answer as this call's result (longer answers are cut to their start and end; "+
		"the whole is kept for read_artifact). Use it for work that would fill your window, such as searching a codebase or reading many files "+
		"to answer a question. By default the subagent can only read (the read-only tools, including read-only MCP tools); list more in "+
		"tools, within what the current mode allows: its edits and commands need the user's approval as yours do. It cannot start subagents. "+
		"Budgets: max_turns model calls (default %d, at most %d) and max_tokens (default %d); when one runs out it returns what it has, marked so.",
		defaultTaskTurns, t.s.m.cfg.MaxIterations, defaultTaskTokens)
}

func (t *taskTool) Schema() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"description":{"type":"string","minLength":1,"maxLength":80,"description":"a few words saying what the subagent does, shown to the user"},`+
		`"prompt":{"type":"string","minLength":1,"description":"the whole task: the subagent knows nothing else, so say what to find or do, where, and what to report"},`+
		`"tools":{"type":"array","items":{"type":"string"},"uniqueItems":true,"description":"tool names the subagent may use (default: the read-only tools)"},`+
		`"max_turns":{"type":"integer","minimum":1,"maximum":%d,"description":"model calls the subagent may make"},`+
		`"max_tokens":{"type":"integer","minimum":%d,"description":"tokens its model calls may process in all"}`+
		`},"required":["description","prompt"],"additionalProperties":false}`, t.s.m.cfg.MaxIterations, minTaskTokens))
}

func (t *taskTool) Kind() sandbox.Kind { return sandbox.KindThink }

// Effect is none: the task itself changes nothing. What the child does
// is decided call by call, by the parent's mode, in the child.
func (t *taskTool) Effect() sandbox.Effect { return sandbox.EffectNone }

// parse reads a call's input. The tool set is checked by Run, against
// the mode of the moment: Preview also titles the call on replay, when the
// mode may have changed since.
func (t *taskTool) parse(input json.RawMessage) (taskInput, error) {
	var in taskInput
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("task: the arguments do not match its schema: %v", err)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return in, fmt.Errorf("task: prompt is empty: say what the subagent should do")
	}
	if in.MaxTurns <= 0 {
		in.MaxTurns = defaultTaskTurns
	}
	in.MaxTurns = min(in.MaxTurns, t.s.m.cfg.MaxIterations)
	if in.MaxTokens <= 0 {
		in.MaxTokens = defaultTaskTokens
	}
	return in, nil
}

func (t *taskTool) Preview(_ *sandbox.Env, input json.RawMessage) (sandbox.Preview, error) {
	in, err := t.parse(input)
	if err != nil {
		return sandbox.Preview{}, err
	}
	return sandbox.Preview{Title: "Subagent: " + in.Description}, nil
}

func (t *taskTool) Run(ctx context.Context, env *sandbox.Env, input json.RawMessage) sandbox.Result {
	in, err := t.parse(input)
	if err != nil {
		return sandbox.Errorf("%v", err)
	}
	names, err := t.s.childToolNames(in.Tools)
	if err != nil {
		return sandbox.Errorf("%v", err)
	}
	return t.s.runTask(ctx, env, in, names)
}

// childToolNames decides a child's tools: those named (or, if none, the
// read-only ones), each of which the parent's mode must offer now.
func (s *Session) childToolNames(requested []string) ([]string, error) {
	reg := s.registry()
	if len(requested) == 0 {
		var out []string
		for _, t := range reg.Tools() {
			// remember would pin into the child's log, which nobody reads.
			if t.Effect() <= sandbox.EffectRead && t.Name() != taskName && t.Name() != "remember" {
				out = append(out, t.Name())
			}
		}
		return out, nil
	}
	for _, n := range requested {
		if n == taskName {
			return nil, fmt.Errorf("task: a subagent cannot start subagents; leave %q out of tools", taskName)
		}
		if _, ok := reg.Get(n); ok {
			continue
		}
		if s.tool(n) != nil {
			return nil, fmt.Errorf("task: tool %q is not available in %s mode, so a subagent cannot have it either; leave it out, or ask the user to change the mode", n, s.Mode())
		}
		var have []string
		for _, t := range reg.Tools() {
			if t.Name() != taskName {
				have = append(have, t.Name())
			}
		}
		return nil, fmt.Errorf("task: there is no tool %q; a subagent may have: %s", n, strings.Join(have, ", "))
	}
	return slices.Compact(slices.Clone(requested)), nil
}

// childTools returns the parent's tools a child with these names may use.
func (s *Session) childTools(names []string) []sandbox.Tool {
	var out []sandbox.Tool
	for _, t := range s.tools() {
		if t.Name() != taskName && slices.Contains(names, t.Name()) {
			out = append(out, t)
		}
	}
	return out
}

// runTask runs a subagent for the task call env.Key and returns its
// answer as the call's result.
func (s *Session) runTask(ctx context.Context, env *sandbox.Env, in taskInput, names []string) sandbox.Result {
	childID, err := newID()
	if err != nil {
		return sandbox.Errorf("task: %v", err)
	}
	call, _ := s.callOf(env.Key)
	started := event.SubagentStarted{CallID: call.ID, Key: env.Key, ChildID: childID, Prompt: in.Prompt, Description: in.Description,
		Tools: names, MaxTurns: in.MaxTurns, MaxTokens: in.MaxTokens}
	if _, err := s.append(ctx, started); err != nil {
		return sandbox.Errorf("task: %v", err)
	}
	child, err := s.m.newChild(ctx, s, started)
	if err != nil {
		s.finishTask(ctx, started, outcome{status: "failed", answer: "the subagent could not be started: " + err.Error()})
		return sandbox.Errorf("task: the subagent could not be started: %v", err)
	}
	defer s.m.closeChild(child)
	child.cl = newProgress(s, env.Key, in.Description, childID)
	t := &turn{s: child, budget: budget{Turns: in.MaxTurns, Tokens: in.MaxTokens}}
	stop, runErr := child.runChild(ctx, t, in.Prompt)
	o := outcomeOf(childID, child.Events(), stop, runErr, t)
	s.finishTask(ctx, started, o)
	res := sandbox.CapOutput(env, answerCaps, o.answer)
	res.IsError = o.status == "failed"
	return res
}

// finishTask records the child's end in the parent's log.
func (s *Session) finishTask(ctx context.Context, st event.SubagentStarted, o outcome) {
	if _, err := s.append(ctx, event.SubagentFinished{CallID: st.CallID, Key: st.Key, ChildID: st.ChildID, Answer: o.answer,
		Status: o.status, Turns: o.turns, Tokens: o.tokens}); err != nil {
		s.m.log.Warn("subagent end not recorded", "session", s.row.ID, "child", st.ChildID, "err", err)
	}
}

// callOf returns the model's call with idempotency key key.
func (s *Session) callOf(key string) (event.ToolCall, bool) {
	parts := strings.Split(key, "/")
	if len(parts) < 3 {
		return event.ToolCall{}, false
	}
	seq, err1 := strconv.ParseInt(parts[len(parts)-2], 10, 64)
	i, err2 := strconv.Atoi(parts[len(parts)-1])
	if err1 != nil || err2 != nil {
		return event.ToolCall{}, false
	}
	for _, e := range s.Events() {
		if a, ok := e.Payload.(event.AssistantMessage); ok && e.Seq == seq && i < len(a.ToolCalls) {
			return a.ToolCalls[i], true
		}
	}
	return event.ToolCall{}, false
}

// newChild creates a subagent's session and makes it live while it runs,
// so that session/cancel by its id reaches it and a second opening of it
// finds it busy.
func (m *Manager) newChild(ctx context.Context, parent *Session, st event.SubagentStarted) (*Session, error) {
	info := parent.Info()
	started := event.SessionStarted{V: event.Version, Cwd: info.Cwd, AdditionalDirs: info.AdditionalDirs, Model: info.Model, Mode: string(parent.Mode())}
	rec, err := m.record(info.Cwd, info.Model, started)
	if err != nil {
		return nil, err
	}
	row := store.Session{ID: st.ChildID, Cwd: info.Cwd, AdditionalDirs: info.AdditionalDirs, Model: info.Model, Mode: started.Mode,
		ParentID: parent.ID(), Title: st.Description}
	recs, err := m.cfg.Store.CreateSession(ctx, row, rec)
	if err != nil {
		return nil, fmt.Errorf("create the subagent's session: %w", err)
	}
	row.CreatedAt, row.UpdatedAt = recs[0].CreatedAt, recs[0].CreatedAt
	m.cfg.Fault.committed(1)
	if err := m.lease(ctx, st.ChildID); err != nil {
		return nil, err
	}
	s, err := newSession(m, row, []event.Event{{Seq: recs[0].Seq, Time: msTime(recs[0].CreatedAt), Payload: started, Tokens: rec.Tokens}})
	if err != nil {
		m.release(st.ChildID)
		return nil, err
	}
	s.parent, s.allowed = parent, st.Tools
	m.mu.Lock()
	m.live[s.ID()] = s
	m.mu.Unlock()
	m.log.Info("subagent started", "session", parent.ID(), "child", s.ID(), "tools", st.Tools)
	return s, nil
}

// closeChild ends a child's stay among the live sessions.
func (m *Manager) closeChild(s *Session) {
	m.mu.Lock()
	if m.live[s.ID()] == s {
		delete(m.live, s.ID())
	}
	m.mu.Unlock()
	s.close()
	m.release(s.ID())
}

// runChild runs the child's one turn on the caller's goroutine, as a
// cancellable turn of the child (so Cancel and Shutdown reach it).
func (s *Session) runChild(ctx context.Context, t *turn, prompt string) (StopReason, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	s.mu.Lock()
	s.cancel, s.done = cancel, done
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cancel, s.done = nil, nil
		s.mu.Unlock()
		close(done)
	}()
	return t.run(ctx, []event.Content{{Type: "text", Text: prompt}})
}

// outcome is how a subagent ended, as its parent learns it.
type outcome struct {
	status string
	answer string
	turns  int
	tokens int
}

// outcomeOf reads a child's log after its turn: the answer is its last
// message when it finished, otherwise everything it said, with a mark
// saying why it stopped.
func outcomeOf(id string, events []event.Event, stop StopReason, err error, t *turn) outcome {
	o := outcome{turns: t.iters, tokens: t.used}
	said, last := childText(events)
	switch {
	case err != nil:
		o.status = "failed"
		o.answer = join(said, fmt.Sprintf("[the subagent failed: %v]", err))
	case stop == StopEndTurn:
		o.status, o.answer = "completed", last
		if last == "" {
			o.answer = join(said, "[the subagent finished without a final message]")
		}
	case stop == StopCancelled:
		o.status = "cancelled"
		o.answer = join(said, "[the subagent was cancelled before it finished; this is what it had]")
	case t.spent && stop == StopMaxTokens:
		o.status = "budget_exhausted"
		o.answer = join(said, fmt.Sprintf("[the subagent stopped before finishing: its model calls used %d tokens of its budget of %d. This is what it had; its whole log is session %s]",
			t.used, t.budget.Tokens, id))
	case t.spent:
		o.status = "budget_exhausted"
		o.answer = join(said, fmt.Sprintf("[the subagent stopped before finishing: it used its budget of %d model calls. This is what it had; its whole log is session %s]",
			t.iters, id))
	default:
		o.status = "completed"
		o.answer = join(said, fmt.Sprintf("[the subagent's last model call ended with %s]", stop))
	}
	return o
}

// childText returns what a child said in its turn: every message (partial
// ones included) and the last complete non-empty one.
func childText(events []event.Event) (said []string, last string) {
	for _, e := range events {
		switch v := e.Payload.(type) {
		case event.AssistantMessage:
			if t := strings.TrimSpace(v.Text); t != "" {
				said = append(said, t)
				last = t
			}
		case event.Interrupted:
			if t := strings.TrimSpace(v.Text); t != "" {
				said = append(said, t+" [interrupted]")
			}
		}
	}
	return said, last
}

func join(said []string, mark string) string {
	return strings.TrimSpace(strings.Join(said, "\n\n") + "\n\n" + mark)
}
