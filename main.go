// Command bridle is a durable, sandboxed agent harness that an editor runs
// as a child process and talks to in ACP over stdio. The command line is
// internal/cli; the stack it runs, internal/app.
package main

import (
	"context"
	"embed"
	"io/fs"
	"os"

	"github.com/bridle-dev/bridle/internal/cli"
	"github.com/bridle-dev/bridle/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

//go:embed testdata/scenarios/*.json
var scenarioFiles embed.FS

//go:embed testdata/workspaces/demo
var demoWorkspace embed.FS

func main() {
	// bridle re-executes itself as the sandbox's first process; that
	// process must do nothing else.
	sandbox.MaybeRunHelper()
	os.Exit(cli.Main(context.Background(), cli.Build{Version: version, Scenarios: sub(scenarioFiles, "testdata/scenarios"),
		DemoWorkspace: sub(demoWorkspace, "testdata/workspaces/demo")}, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func sub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embed patterns guarantee the directories
	}
	return s
}
