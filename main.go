// Command bridle is a durable, sandboxed agent harness that an editor runs
// as a child process and talks to in ACP over stdio. The command line is
// internal/cli; the stack it runs, internal/app.
package main

import (
	"context"
	_ "embed"
	"os"
	"strings"

	"github.com/bridle-dev/bridle/internal/cli"
	"github.com/bridle-dev/bridle/sandbox/box"
)

// The release's version is the VERSION file; make dist (internal/dist)
// stamps the commit and date with -ldflags "-X main.commit=... -X
// main.date=...". A plain go build or go install leaves them empty and
// cli.Build falls back to what the Go toolchain recorded.
var (
	//go:embed VERSION
	version string
	commit  string
	date    string
)

func main() {
	// bridle re-executes itself as the sandbox's first process; that
	// process must do nothing else.
	box.MaybeRunHelper()
	b := cli.Build{Version: strings.TrimSpace(version), Commit: commit, Date: date}
	os.Exit(cli.Main(context.Background(), b, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
