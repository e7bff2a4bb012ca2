package app

import (
	"os"
	"path/filepath"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/extend"
	"github.com/bridle-dev/bridle/session"
)

// Extensions returns the folders of the skills and prompt commands of a
// session in cwd (package extend), with the session's hidden paths.
func (a *App) Extensions(cwd string) extend.Places {
	hidden, own := a.paths()
	return places(cwd, hidden, own)
}

// places are the user's folders (bridle's settings directory, and
// ~/.agents/skills), then the project's in cwd, read with hidden and own
// hidden as the file tools hide them.
func places(cwd string, hidden, own []string) extend.Places {
	configDir := ""
	if p := config.UserPath(os.Getenv); p != "" {
		configDir = filepath.Dir(p)
	}
	home, _ := os.UserHomeDir()
	return extend.Standard(configDir, home, cwd, hidden, own)
}

// ExtensionsHere reads the skills and prompt commands a session in the
// current directory would have, with the hidden paths of a session on
// the database db (bridle doctor).
func ExtensionsHere(db string) (extend.Set, error) {
	dir, err := os.Getwd()
	if err != nil {
		return extend.Set{}, err
	}
	files := projectFiles(db)
	p := places(dir, files.Hidden, files.Own)
	p.Reserved = session.BuiltinCommands
	return extend.Find(p), nil
}
