package tools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/bridle-dev/bridle/permission"
)

// Call is one call of a tool as Registry.Prepare makes it ready to run:
// the tool the mode offers under its name, the input, valid against the
// tool's schema, what the mode alone says of it, and its preview. The
// session asks the user about it if it must, then runs it (Plan, Run).
type Call struct {
	Tool  Tool
	Input json.RawMessage
	// Effect is the tool's.
	Effect permission.Effect
	// Verdict is what the registry's mode alone says (Registry.Decide):
	// Allow, or Ask; a standing answer in the log may settle an Ask.
	Verdict permission.Decision
	// Preview is what the editor's card and the question show.
	Preview Preview
}

// ErrNotOffered is what Prepare's error is (errors.Is) when the mode
// does not offer the tool a call names.
var ErrNotOffered = errors.New("the tool is not offered")

// notOffered is Lookup's error: worded for the model, and ErrNotOffered.
type notOffered struct{ msg string }

func (e notOffered) Error() string        { return e.msg }
func (e notOffered) Is(target error) bool { return target == ErrNotOffered }

// Prepare makes a call of the tool named name with input ready to run,
// once: it looks the tool up in the mode, asks env for the call's Env
// (the session brings its redactor up to date first, so env is asked
// only for a tool the mode offers), validates input against the tool's
// schema (once: a built-in tool does not validate it again with the same
// Env) and previews the call. The errors are worded for the model, which
// gets them as the call's result: one that is ErrNotOffered (the mode
// lacks the tool), one of env's own (returned as it is), or one that
// says the input is wrong.
func (r *Registry) Prepare(ctx context.Context, name string, input json.RawMessage, env func() (*Env, error)) (*Call, error) {
	t, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	e, err := env()
	if err != nil {
		return nil, err
	}
	if err := r.CheckCall(e, t, input); err != nil {
		return nil, err
	}
	p, err := t.Preview(ctx, e, input)
	if err != nil {
		return nil, err
	}
	return &Call{Tool: t, Input: input, Effect: t.Effect(), Verdict: r.Decide(t), Preview: p}, nil
}

// CallOf is a call of t with input that is not looked up, validated or
// previewed: one the user approved before a restart, run as the log
// recorded it (the tool validates its input as it runs).
func CallOf(t Tool, input json.RawMessage) *Call {
	return &Call{Tool: t, Input: input, Effect: t.Effect()}
}

// Plan is the edit the call will make, planned with env now (nil for a
// tool that does not edit files, Planner): its file's hashes before and
// after. With the Env the call was prepared with, the preview's plan is
// reused while the file did not change. An error says the edit cannot
// apply (its text is not found, not unique…), in words for the model.
func (c *Call) Plan(ctx context.Context, env *Env) (*FileEdit, error) {
	p, ok := c.Tool.(Planner)
	if !ok {
		return nil, nil
	}
	fe, err := p.Plan(ctx, env, c.Input)
	if err != nil {
		return nil, err
	}
	return &fe, nil
}
