package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/bridle-dev/bridle/permission"
)

// Registry is the set of tools one mode offers.
type Registry struct {
	mode  permission.Mode
	tools []Tool

	mu      sync.Mutex
	schemas map[string]*jsonschema.Resolved // compiled on first Check
}

// NewRegistry returns the registry of mode over the given tools: the tools
// whose effect the mode permits at all. read-only offers only tools that
// read; the other modes offer every tool and differ in what needs
// approval (Decide).
func NewRegistry(mode permission.Mode, tools []Tool) *Registry {
	r := &Registry{mode: mode, schemas: map[string]*jsonschema.Resolved{}}
	for _, t := range tools {
		if !permission.Offered(mode, t.Effect()) {
			continue
		}
		r.tools = append(r.tools, t)
	}
	return r
}

// precompiled is implemented by the built-in tools: their schema is
// derived from their input type and compiled once, at start.
type precompiled interface {
	compiled() *jsonschema.Resolved
}

func compileSchema(t Tool) (*jsonschema.Resolved, error) {
	var sch jsonschema.Schema
	if err := json.Unmarshal(t.Schema(), &sch); err != nil {
		return nil, fmt.Errorf("tool %s has an invalid schema: %w", t.Name(), err)
	}
	res, err := sch.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s has an invalid schema: %w", t.Name(), err)
	}
	return res, nil
}

// schema returns t's compiled schema: a built-in tool's own, another's
// (an MCP server's, the task tool's) compiled once per registry.
func (r *Registry) schema(t Tool) (*jsonschema.Resolved, error) {
	if p, ok := t.(precompiled); ok {
		return p.compiled(), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if sch, ok := r.schemas[t.Name()]; ok {
		return sch, nil
	}
	sch, err := compileSchema(t)
	if err != nil {
		return nil, err
	}
	r.schemas[t.Name()] = sch
	return sch, nil
}

// Mode returns the registry's mode.
func (r *Registry) Mode() permission.Mode { return r.mode }

// Tools returns the tools in catalogue order.
func (r *Registry) Tools() []Tool { return r.tools }

// Get returns the named tool, or false if the mode does not offer it.
func (r *Registry) Get(name string) (Tool, bool) {
	for _, t := range r.tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// Lookup returns the named tool, or an error for the model that says the
// mode does not offer it and which tools it does offer (ErrNotOffered).
func (r *Registry) Lookup(name string) (Tool, error) {
	if t, ok := r.Get(name); ok {
		return t, nil
	}
	names := make([]string, len(r.tools))
	for i, t := range r.tools {
		names[i] = t.Name()
	}
	return nil, notOffered{fmt.Sprintf("tool %q is not available in %s mode; the tools of this mode are: %s. The user can change the mode in the editor",
		name, r.mode, strings.Join(names, ", "))}
}

// Check validates a call's input against the tool's schema. The error is
// worded for the model, which gets it as the call's result.
func (r *Registry) Check(t Tool, input json.RawMessage) error {
	sch, err := r.schema(t)
	if err != nil {
		return err
	}
	return validateAgainst(sch, t.Name(), input)
}

// CheckCall is Check for a call whose Env came from ForCall: a built-in
// tool then does not validate the same input again in Preview, Plan or
// Run.
func (r *Registry) CheckCall(env *Env, t Tool, input json.RawMessage) error {
	if err := r.Check(t, input); err != nil {
		return err
	}
	env.markValidated(t.Name(), input)
	return nil
}

// describe lists the leaf failures of a validation error, one per line.
// describe rewords the validator's message for the model: "validating
// /properties/path: type: 5 has type …" says where and what.
func describe(err error) string {
	msg := strings.TrimPrefix(err.Error(), "validating root: ")
	return strings.ReplaceAll(msg, "validating /properties/", "at /")
}

// Decide is what the registry's mode alone says about a call to t: Allow
// or Ask (a tool the mode does not offer is not in the registry).
func (r *Registry) Decide(t Tool) permission.Decision { return permission.ForMode(r.mode, t.Effect()) }

// Registries keeps one registry per mode, built once per set of tools:
// a turn asks for its registry every model call, and gets the same one
// (with the schemas it has compiled) while the mode and the tools — the
// built-in ones, the task tool, an MCP server's — stay the same. The zero
// value is ready to use.
type Registries struct {
	mu   sync.Mutex
	last map[permission.Mode]cached
}

type cached struct {
	tools []Tool
	reg   *Registry
}

// Get returns the registry of mode over tools, building it only when the
// mode's tool set changed since the last call.
func (c *Registries) Get(mode permission.Mode, tools []Tool) *Registry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.last[mode]; ok && sameTools(e.tools, tools) {
		return e.reg
	}
	if c.last == nil {
		c.last = map[permission.Mode]cached{}
	}
	r := NewRegistry(mode, tools)
	c.last[mode] = cached{tools: slices.Clone(tools), reg: r}
	return r
}

// sameTools reports whether a and b hold the same tool values in the same
// order. A tool of a type that cannot be compared counts as changed.
func sameTools(a, b []Tool) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // a comparable struct holding an incomparable value
		}
	}()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ta, tb := reflect.TypeOf(a[i]), reflect.TypeOf(b[i])
		if ta != tb || !ta.Comparable() || a[i] != b[i] {
			return false
		}
	}
	return true
}
