//go:build !linux

package sandbox

import "github.com/bridle-dev/bridle/workspace"

func openFastTree(env *Env, dir, prefix string, ig *workspace.Ignore) (fileTree, bool) {
	return nil, false
}
