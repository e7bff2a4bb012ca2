// Package sandbox is the box the agent works in: the tools, the registry of
// tools each mode allows, path confinement to the workspace, and (later)
// confined processes, output caps and redaction.
package sandbox

import (
	"context"
	"encoding/json"
)

// Kind tells an editor how to show a tool call (ACP's ToolKind).
type Kind string

const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindThink   Kind = "think"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// Effect is what a tool can do to the machine. Modes decide approvals by
// effect, so a new tool only has to say which it has.
type Effect int

const (
	// EffectNone changes nothing outside the session (remember, think).
	EffectNone Effect = iota
	// EffectRead reads the workspace.
	EffectRead
	// EffectEdit writes files in the workspace.
	EffectEdit
	// EffectExecute runs a process.
	EffectExecute
)

// Location is a file (and line) a call touches.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// Diff is an edit as an editor shows it.
type Diff struct {
	Path    string  `json:"path"`
	OldText *string `json:"old_text,omitempty"`
	NewText string  `json:"new_text"`
}

// Preview describes a call before it runs: for the editor's tool card and
// for the approval question.
type Preview struct {
	Title     string
	Locations []Location
	Diff      *Diff
	// Command is the exact command line for execute tools.
	Command string
}

// Result is what a call produced.
type Result struct {
	// Output is what the model reads.
	Output    string
	IsError   bool
	Diff      *Diff
	Locations []Location
	// Artifact names the file holding the whole output when Output was capped.
	Artifact string
	// Lines and Bytes measure the whole output, before any cap.
	Lines, Bytes int
}

// Errorf returns an error result the model can read.
func Errorf(format string, args ...any) Result {
	return Result{Output: sprintf(format, args...), IsError: true}
}

// Env is what a call may touch.
type Env struct {
	Root *Root
	// Key is the call's idempotency key.
	Key string
}

// Tool is one capability offered to the model.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON Schema of the tool's input.
	Schema() json.RawMessage
	Kind() Kind
	Effect() Effect
	// Preview describes a call with input without running it. An error
	// means the input is invalid; it is given to the model as the result.
	Preview(env *Env, input json.RawMessage) (Preview, error)
	Run(ctx context.Context, env *Env, input json.RawMessage) Result
}
