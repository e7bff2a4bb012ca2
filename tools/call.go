package tools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/workspace"
)

// Call is one call of a tool as Registry.Prepare makes it ready to run:
// the tool the mode offers under its name, the input, valid against the
// tool's schema, what the mode alone says of it, and its preview. The
// session asks the user about it if it must, then runs it (Run).
//
// What the session reads of the call is here as plain data, so that it
// goes into this package twice per call, to prepare it and to run it:
// the fields above are set by Prepare (or CallOf), the ones after Run's
// comment by Run, before it hands the call to the session's steps.
type Call struct {
	Tool Tool
	// Name is the tool's.
	Name  string
	Input json.RawMessage
	// Effect is the tool's.
	Effect permission.Effect
	// Mode is the registry's, whose Verdict this is.
	Mode permission.Mode
	// Verdict is what the registry's mode alone says (Registry.Decide):
	// Allow, or Ask; a standing answer in the log may settle an Ask.
	Verdict permission.Decision
	// Preview is what the editor's card and the question show.
	Preview Preview
	// Cacheable says the tool's output depends on nothing but the files
	// it reads (Cacheable): the session may serve it from its cache.
	Cacheable bool

	// Set by Run with the Env the call runs with.

	// Plan is the edit the call will make (nil for a tool that does not
	// edit files, Planner): its file's hashes before and after.
	Plan *FileEdit
	// Plans are a MultiPlanner's edits, made as Plan is.
	Plans []FileEdit
	// Deps are what a cacheable call reads (Cacheable.Depends).
	Deps []workspace.Dep
	// Volatile says this call of a cacheable tool must not be cached
	// (Volatile).
	Volatile bool
	// Watched says the tool tells Env.Writes of every file it is about
	// to change (WritesWatcher); only asked of a tool that executes.
	Watched bool
}

// ErrNotOffered is what Prepare's error is (errors.Is) when the mode
// does not offer the tool a call names.
var ErrNotOffered = errors.New("the tool is not offered")

// notOffered is Lookup's error: worded for the model, and ErrNotOffered.
type notOffered struct{ msg string }

func (e notOffered) Error() string        { return e.msg }
func (e notOffered) Is(target error) bool { return target == ErrNotOffered }

// ErrNotApplied is what Run's error is (errors.Is) when an edit cannot
// apply: its text is not found, not unique… Its text is the plan's, for
// the model; nothing ran.
var ErrNotApplied = errors.New("the edit cannot apply")

type notApplied struct{ err error }

func (e notApplied) Error() string        { return e.err.Error() }
func (e notApplied) Unwrap() error        { return e.err }
func (e notApplied) Is(target error) bool { return target == ErrNotApplied }

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
	c := CallOf(t, input)
	c.Mode, c.Verdict, c.Preview = r.mode, r.Decide(t), p
	// A call that reaches a host the settings do not allow is asked
	// about in every mode (read-only included: the question is the only
	// way the page is read), and a standing answer for its host settles it.
	if g, ok := t.(HostGate); ok && p.Host != "" && c.Verdict == permission.Allow && !g.HostAllowed(p.Host) {
		c.Verdict = permission.Ask
	}
	return c, nil
}

// CallOf is a call of t with input that is not looked up, validated or
// previewed: one the user approved before a restart, run as the log
// recorded it (the tool validates its input as it runs).
func CallOf(t Tool, input json.RawMessage) *Call {
	_, cacheable := t.(Cacheable)
	return &Call{Tool: t, Name: t.Name(), Input: input, Effect: t.Effect(), Cacheable: cacheable}
}

// Run runs the call with env, as around says. It plans an edit first,
// with env now (with the Env the call was prepared with, the preview's
// plan is reused while the file did not change): an edit that cannot
// apply is an error that is ErrNotApplied, and around is not called.
// It then sets what the session's steps read of the call (Plan, Deps,
// Volatile, Watched) and calls around, which runs the tool by calling
// run, once, or not at all (a cached output); around's error is Run's.
func (c *Call) Run(ctx context.Context, env *Env, around func(run func() Result) error) error {
	if p, ok := c.Tool.(Planner); ok {
		fe, err := p.Plan(ctx, env, c.Input)
		if err != nil {
			return notApplied{err}
		}
		c.Plan = &fe
	}
	if p, ok := c.Tool.(MultiPlanner); ok {
		fes, err := p.PlanFiles(ctx, env, c.Input)
		if err != nil {
			return notApplied{err}
		}
		c.Plans = fes
	}
	if ct, ok := c.Tool.(Cacheable); ok {
		c.Deps = ct.Depends(ctx, env, c.Input)
		if v, ok := c.Tool.(Volatile); ok {
			c.Volatile = v.Volatile(env)
		}
	}
	if w, ok := c.Tool.(WritesWatcher); ok && c.Effect == permission.EffectExecute {
		c.Watched = w.WatchesWrites() == nil
	}
	return around(func() Result { return c.Tool.Run(ctx, env, c.Input) })
}
