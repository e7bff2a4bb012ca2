package sandbox

import (
	"encoding/json"

	"github.com/bridle-dev/bridle/workspace"
)

// Cacheable is implemented by tools whose output depends on nothing but
// the files they read. Depends names those files for a call; the session
// keeps the output in a cache that the workspace watcher invalidates, and
// knows which files the model has seen.
type Cacheable interface {
	Depends(env *Env, input json.RawMessage) []workspace.Dep
}

// A read depends on its file.
func (t ReadFile) Depends(env *Env, input json.RawMessage) []workspace.Dep {
	return depsOf(t.Preview(env, input))(false)
}

// A listing, a glob and a search depend on the tree they looked at.
func (t ListDir) Depends(env *Env, input json.RawMessage) []workspace.Dep {
	return depsOf(t.Preview(env, input))(true)
}

func (t Glob) Depends(env *Env, input json.RawMessage) []workspace.Dep {
	return depsOf(t.Preview(env, input))(true)
}

func (t Grep) Depends(env *Env, input json.RawMessage) []workspace.Dep {
	return depsOf(t.Preview(env, input))(true)
}

func depsOf(p Preview, err error) func(tree bool) []workspace.Dep {
	return func(tree bool) []workspace.Dep {
		if err != nil {
			return nil
		}
		var deps []workspace.Dep
		for _, l := range p.Locations {
			deps = append(deps, workspace.Dep{Path: l.Path, Tree: tree})
		}
		return deps
	}
}
