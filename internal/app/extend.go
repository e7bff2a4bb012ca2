package app

import (
	"os"
	"path/filepath"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/extend"
)

// Extensions returns the folders of the skills and prompt commands of a
// session in cwd: the user's (bridle's settings directory, and
// ~/.agents/skills), then the project's, read with the session's hidden
// paths (package extend).
func (a *App) Extensions(cwd string) extend.Places {
	hidden, own := a.paths()
	configDir := ""
	if p := config.UserPath(os.Getenv); p != "" {
		configDir = filepath.Dir(p)
	}
	home, _ := os.UserHomeDir()
	return extend.Standard(configDir, home, cwd, hidden, own)
}
