package scripted

import (
	"embed"
	"io/fs"
)

// The scenarios `scripted/NAME` names, and the project `bridle demo`
// copies and works in, live here rather than in the repository's testdata/
// so that nothing of the tests' data is embedded in the product. The
// project's directory begins with "_" so the go tool does not build its
// main.go as a package of bridle.
var (
	//go:embed scenarios/*.json
	scenarioFiles embed.FS
	//go:embed _demo
	demoFiles embed.FS
)

// Scenarios returns the embedded scenarios (demo.json, …).
func Scenarios() fs.FS { return sub(scenarioFiles, "scenarios") }

// DemoWorkspace returns the project `bridle demo` works in.
func DemoWorkspace() fs.FS { return sub(demoFiles, "_demo") }

func sub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embed patterns guarantee the directories
	}
	return s
}
