package tools

import (
	"context"
	"encoding/json"

	"github.com/bridle-dev/bridle/workspace"
)

// Cacheable is implemented by tools whose output depends on nothing but
// the files they read. Depends names those files for a call; the session
// keeps the output in a cache that the workspace watcher invalidates, and
// knows which files the model has seen.
type Cacheable interface {
	Depends(ctx context.Context, env *Env, input json.RawMessage) []workspace.Dep
}

// Volatile is implemented by cacheable tools some of whose calls must not
// be cached: their output depends on more than the files on disk.
type Volatile interface {
	Volatile(env *Env) bool
}

// A read through the editor shows its buffer, which changes without the
// watcher seeing it: it is never cached.
func (ReadFile) Volatile(env *Env) bool { return env.usesEditor() }

// A read depends on its file.
func (t ReadFile) Depends(ctx context.Context, env *Env, input json.RawMessage) []workspace.Dep {
	p, err := t.Preview(ctx, env, input)
	return deps(p, err, false)
}

// A listing, a glob and a search depend on the tree they looked at.
func (t ListDir) Depends(ctx context.Context, env *Env, input json.RawMessage) []workspace.Dep {
	p, err := t.Preview(ctx, env, input)
	return deps(p, err, true)
}

func (t Glob) Depends(ctx context.Context, env *Env, input json.RawMessage) []workspace.Dep {
	p, err := t.Preview(ctx, env, input)
	return deps(p, err, true)
}

func (t Grep) Depends(ctx context.Context, env *Env, input json.RawMessage) []workspace.Dep {
	p, err := t.Preview(ctx, env, input)
	return deps(p, err, true)
}

// deps are the locations a call's preview names: what it will read.
func deps(p Preview, err error, tree bool) []workspace.Dep {
	if err != nil {
		return nil
	}
	var out []workspace.Dep
	for _, l := range p.Locations {
		out = append(out, workspace.Dep{Path: l.Path, Tree: tree})
	}
	return out
}
