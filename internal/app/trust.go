package app

import (
	"os"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// projectFiles reads a project's files as a session on the database db
// would: through the file tools' confinement, with its hidden paths.
func projectFiles(db string) confine.ProjectFiles {
	sbx, err := config.ParseSandbox(config.For("").Settings.Sandbox)
	if err != nil {
		sbx = config.Sandbox{}
	}
	return confine.ProjectFiles{Hidden: HiddenPaths(db, sbx), Own: OwnPaths(db)}
}

// Trust accepts the project settings of dir as they are now
// (`bridle trust DIR`, config.Accept): read as a session on db would
// read them, recorded in bridle's data directory.
func Trust(db, dir string) (config.Review, error) {
	return config.Accept(config.UserPath(os.Getenv), dir, projectFiles(db), config.Pins{Dir: config.PinsDir(os.Getenv)})
}

// TrustRecords lists what the user accepted of each project, and how
// each stands now (`bridle trust --list`).
func TrustRecords(db string) ([]config.PinState, []error) {
	return config.PinStates(config.UserPath(os.Getenv), projectFiles(db), config.Pins{Dir: config.PinsDir(os.Getenv)})
}
