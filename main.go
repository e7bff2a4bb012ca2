// Command bridle is a durable, sandboxed agent harness that an editor runs
// as a child process and talks to in ACP over stdio. The command line is
// internal/cli; the stack it runs, internal/app.
package main

import (
	"context"
	"os"

	"github.com/bridle-dev/bridle/internal/cli"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/sandbox"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	// bridle re-executes itself as the sandbox's first process; that
	// process must do nothing else.
	sandbox.MaybeRunHelper()
	os.Exit(cli.Main(context.Background(), cli.Build{Version: version, Scenarios: scripted.Scenarios(),
		DemoWorkspace: scripted.DemoWorkspace()}, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
