package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Stamped returns b with the commit and date filled in: from the release
// build's -ldflags when it set them, else from what the Go toolchain
// recorded (a build in a git checkout records the revision; go install
// from the module proxy records none, and "unknown" says so).
func (b Build) Stamped() Build {
	if b.Commit != "" && b.Date != "" {
		return b
	}
	var rev, at string
	modified := false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if b.Commit == "" {
		b.Commit = rev
		if modified && rev != "" {
			b.Commit += "-dirty"
		}
	}
	if b.Date == "" {
		b.Date = at
	}
	for _, f := range []*string{&b.Commit, &b.Date} {
		if *f == "" {
			*f = "unknown"
		}
	}
	return b
}

// Info is the build as initialize's _meta.bridle.build reports it, so an
// editor can tell which binary it runs.
func (b Build) Info() map[string]any {
	b = b.Stamped()
	return map[string]any{"version": b.Version, "commit": b.Commit, "date": b.Date,
		"go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH}
}

// String is the line bridle --version prints.
func (b Build) String() string {
	b = b.Stamped()
	return fmt.Sprintf("bridle %s (commit %s, built %s, %s %s/%s)", b.Version, b.Commit, b.Date,
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
