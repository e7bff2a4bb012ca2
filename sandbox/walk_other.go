//go:build !linux

package sandbox

import (
	"os"

	"github.com/bridle-dev/bridle/workspace"
)

func openFastTree(top *os.File, prefix string, ig *workspace.Ignore, hide *walkGuard) (fileTree, bool) {
	return nil, false
}
