package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/tools"
)

// Name is the task tool's name.
const Name = "task"

// PlanTool is the parent's plan tool (tools.Plan), which children see
// the result of but do not get.
const PlanTool = "plan"

// Defaults and limits of a task call.
const (
	defaultTaskTurns  = 10
	defaultTaskTokens = 200_000
	minTaskTokens     = 1_000
)

// answerCaps bound the answer the parent reads; the rest is kept in the
// call's artifact (and the child's log).
var answerCaps = tools.Caps{HeadLines: 300, HeadBytes: 16 << 10, TailLines: 60, TailBytes: 4 << 10}

// System is added to a subagent's system prompt.
const System = `

You are a subagent: another agent gave you one task, and sees nothing of your work but your final message. Do the task with your tools, then end with a final message that is complete on its own: the answer, the facts found (paths, names, line numbers), what you changed if anything, and what is left undone. Do not ask questions: nobody can answer them.`

// Parent is what a task call needs of the top-level session it runs in.
type Parent interface {
	ID() string
	Mode() permission.Mode
	// Registry is the registry of the parent's mode over its tools now.
	Registry() *tools.Registry
	// Has says whether the parent has a tool of that name in any mode.
	Has(name string) bool
	// MaxTurns bounds a child's model calls.
	MaxTurns() int
	// Events is the parent's log.
	Events() []event.Event
	// Append records events in the parent's log.
	Append(ctx context.Context, p ...event.Payload) error
	// Env is the sandbox environment of the parent's call with that key.
	Env(key string) *tools.Env
	// Warn logs a problem that does not stop the call.
	Warn(msg string, args ...any)
	// NewID returns an id for a child session.
	NewID() (string, error)
	// Spawn creates the child that st names, runs its one turn with cl as
	// its client, and closes it. err says the child could not be started;
	// a turn that failed is Run.Err.
	Spawn(ctx context.Context, st event.SubagentStarted, b Budget, cl Client) (r Run, err error)
	// Reopen recovers the child of st that a restart cut short, without
	// running it again, and returns its log; created is false if its
	// session was never created.
	Reopen(ctx context.Context, st event.SubagentStarted) (events []event.Event, created bool, err error)
	// Show sends an update of the parent's session to the editor.
	Show(ctx context.Context, u acp.SessionUpdate)
	// Ask puts a question to the user through the parent's editor.
	Ask(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
}

// Client is how a running child reaches the editor (session.Client).
type Client interface {
	Update(ctx context.Context, sessionID string, u acp.SessionUpdate) error
	RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
}

// Budget bounds a child's turn.
type Budget struct {
	Turns  int // model calls
	Tokens int // tokens its model calls may process in all
}

// Run is how a child's turn went.
type Run struct {
	Stop   string // the turn's stop reason
	Err    error  // the turn failed
	Iters  int    // model calls made
	Used   int    // tokens they processed
	Spent  bool   // stopped because the budget ran out
	Events []event.Event
}

// Tool is the task tool of one parent session.
type Tool struct{ p Parent }

// New returns the task tool of p.
func New(p Parent) *Tool { return &Tool{p: p} }

type taskInput struct {
	Description string   `json:"description"`
	Prompt      string   `json:"prompt"`
	Tools       []string `json:"tools,omitempty"`
	MaxTurns    int      `json:"max_turns,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
}

func (t *Tool) Name() string { return Name }

func (t *Tool) Description() string {
	return fmt.Sprintf("Hand a self-contained piece of work to a subagent: a fresh session with its own context window that sees only your prompt "+
		"(not this conversation) and returns only its final answer as this call's result (longer answers are cut to their start and end; "+
		"the whole is kept for read_artifact). Use it for work that would fill your window, such as searching a codebase or reading many files "+
		"to answer a question. By default the subagent can only read (the read-only tools, including read-only MCP tools); list more in "+
		"tools, within what the current mode allows: its edits and commands need the user's approval as yours do. It cannot start subagents. "+
		"Budgets: max_turns model calls (default %d, at most %d) and max_tokens (default %d); when one runs out it returns what it has, marked so.",
		defaultTaskTurns, t.p.MaxTurns(), defaultTaskTokens)
}

func (t *Tool) Schema() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"description":{"type":"string","minLength":1,"maxLength":80,"description":"a few words saying what the subagent does, shown to the user"},`+
		`"prompt":{"type":"string","minLength":1,"description":"the whole task: the subagent knows nothing else, so say what to find or do, where, and what to report"},`+
		`"tools":{"type":"array","items":{"type":"string"},"uniqueItems":true,"description":"tool names the subagent may use (default: the read-only tools)"},`+
		`"max_turns":{"type":"integer","minimum":1,"maximum":%d,"description":"model calls the subagent may make"},`+
		`"max_tokens":{"type":"integer","minimum":%d,"description":"tokens its model calls may process in all"}`+
		`},"required":["description","prompt"],"additionalProperties":false}`, t.p.MaxTurns(), minTaskTokens))
}

func (t *Tool) Kind() tools.Kind { return tools.KindThink }

// Effect is none: the task itself changes nothing. What the child does
// is decided call by call, by the parent's mode, in the child.
func (t *Tool) Effect() permission.Effect { return permission.EffectNone }

// parse reads a call's input. The tool set is checked by Run, against
// the mode of the moment: Preview also titles the call on replay, when the
// mode may have changed since.
func (t *Tool) parse(input json.RawMessage) (taskInput, error) {
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
	in.MaxTurns = min(in.MaxTurns, t.p.MaxTurns())
	if in.MaxTokens <= 0 {
		in.MaxTokens = defaultTaskTokens
	}
	return in, nil
}

func (t *Tool) Preview(_ context.Context, _ *tools.Env, input json.RawMessage) (tools.Preview, error) {
	in, err := t.parse(input)
	if err != nil {
		return tools.Preview{}, err
	}
	return tools.Preview{Title: "Subagent: " + in.Description}, nil
}

func (t *Tool) Run(ctx context.Context, env *tools.Env, input json.RawMessage) tools.Result {
	in, err := t.parse(input)
	if err != nil {
		return tools.Errorf("%v", err)
	}
	names, err := ToolNames(t.p, in.Tools)
	if err != nil {
		return tools.Errorf("%v", err)
	}
	return t.run(ctx, env, in, names)
}

// ToolNames decides a child's tools: those named (or, if none, the
// read-only ones), each of which the parent's mode must offer now.
func ToolNames(p Parent, requested []string) ([]string, error) {
	reg := p.Registry()
	if len(requested) == 0 {
		var out []string
		for _, t := range reg.Tools() {
			// remember would pin into the child's log, which nobody reads;
			// the plan is the parent's, which a child reads but does not set.
			if t.Effect() <= permission.EffectRead && t.Name() != Name && t.Name() != "remember" && t.Name() != PlanTool {
				out = append(out, t.Name())
			}
		}
		return out, nil
	}
	for _, n := range requested {
		if n == Name {
			return nil, fmt.Errorf("task: a subagent cannot start subagents; leave %q out of tools", Name)
		}
		if n == PlanTool {
			return nil, fmt.Errorf("task: the plan is yours; a subagent sees it but cannot set it, so leave %q out of tools", PlanTool)
		}
		if _, ok := reg.Get(n); ok {
			continue
		}
		if p.Has(n) {
			return nil, fmt.Errorf("task: tool %q is not available in %s mode, so a subagent cannot have it either; leave it out, or ask the user to change the mode", n, p.Mode())
		}
		var have []string
		for _, t := range reg.Tools() {
			if t.Name() != Name {
				have = append(have, t.Name())
			}
		}
		return nil, fmt.Errorf("task: there is no tool %q; a subagent may have: %s", n, strings.Join(have, ", "))
	}
	return slices.Compact(slices.Clone(requested)), nil
}

// Tools returns those of the parent's tools a child with these names may
// use.
func Tools(all []tools.Tool, names []string) []tools.Tool {
	var out []tools.Tool
	for _, t := range all {
		if t.Name() != Name && slices.Contains(names, t.Name()) {
			out = append(out, t)
		}
	}
	return out
}

// run runs a subagent for the task call env.Key and returns its answer as
// the call's result.
func (t *Tool) run(ctx context.Context, env *tools.Env, in taskInput, names []string) tools.Result {
	childID, err := t.p.NewID()
	if err != nil {
		return tools.Errorf("task: %v", err)
	}
	call, _ := callOf(t.p.Events(), env.Key)
	// The task and its description are the model's words, redacted as all
	// it writes: the child's log would otherwise keep its first prompt
	// redacted by the gentler rules of what a user types, and the child's
	// title and card show the description.
	prompt, desc := in.Prompt, in.Description
	if env.Redactor != nil {
		prompt, desc = env.Redactor.Redact(prompt), env.Redactor.Redact(desc)
	}
	started := event.SubagentStarted{CallID: call.ID, Key: env.Key, ChildID: childID, Prompt: prompt, Description: desc,
		Tools: names, MaxTurns: in.MaxTurns, MaxTokens: in.MaxTokens}
	if err := t.p.Append(ctx, started); err != nil {
		return tools.Errorf("task: %v", err)
	}
	cl := newProgress(t.p, env.Key, call.Input, desc, childID)
	run, err := t.p.Spawn(ctx, started, Budget{Turns: in.MaxTurns, Tokens: in.MaxTokens}, cl)
	if err != nil {
		finish(ctx, t.p, started, outcome{status: "failed", answer: "the subagent could not be started: " + err.Error()})
		return tools.Errorf("task: the subagent could not be started: %v", err)
	}
	o := outcomeOf(childID, run, Budget{Turns: in.MaxTurns, Tokens: in.MaxTokens})
	finish(ctx, t.p, started, o)
	res := tools.CapOutput(env, answerCaps, o.answer)
	res.IsError = o.status == "failed"
	return res
}

// finish records the child's end in the parent's log.
func finish(ctx context.Context, p Parent, st event.SubagentStarted, o outcome) {
	if err := p.Append(ctx, event.SubagentFinished{CallID: st.CallID, Key: st.Key, ChildID: st.ChildID, Answer: o.answer,
		Status: o.status, Turns: o.turns, Tokens: o.tokens}); err != nil {
		p.Warn("subagent end not recorded", "session", p.ID(), "child", st.ChildID, "err", err)
	}
}

// callOf returns the model's call with idempotency key key.
func callOf(events []event.Event, key string) (event.ToolCall, bool) {
	seq, i, ok := event.ParseCallKey(key)
	if !ok {
		return event.ToolCall{}, false
	}
	for _, e := range events {
		if a, ok := e.Payload.(event.AssistantMessage); ok && e.Seq == seq && i < len(a.ToolCalls) {
			return a.ToolCalls[i], true
		}
	}
	return event.ToolCall{}, false
}
