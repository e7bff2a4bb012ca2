//go:build !linux

package confine

import (
	"os"

	"github.com/bridle-dev/bridle/workspace"
)

func openFastTree(top *os.File, prefix string, ig *workspace.Ignore, hide *walkGuard) (Tree, bool) {
	return nil, false
}

// closeFD is never called here: only the fast tree makes a dirFD.
func closeFD(int) {}
