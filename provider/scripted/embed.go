package scripted

import (
	"embed"
	"io/fs"
)

// The scenarios `scripted/NAME` names live here rather than in the
// repository's testdata/ so that nothing of the tests' data is embedded in
// the product.
//
//go:embed scenarios/*.json
var scenarioFiles embed.FS

// Scenarios returns the embedded scenarios (demo.json, …).
func Scenarios() fs.FS {
	s, err := fs.Sub(scenarioFiles, "scenarios")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	return s
}
