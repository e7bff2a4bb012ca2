package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bridle-dev/bridle/internal/app"
)

const serveHelp = `Usage: bridle [serve] [--db PATH] [--model provider/model-id]

Speak ACP (the Agent Client Protocol, JSON-RPC) on stdin and stdout: what an
editor runs as its agent command (agent.json runs bridle serve). Logs go to
stderr. It stops when stdin ends, on LSP's shutdown and exit, or on SIGINT or
SIGTERM, after recording the turns it cancels. See docs/protocol.md.

Flags:
`

// serve speaks ACP on stdin/stdout until the editor goes away, sends LSP's
// exit, or a SIGINT/SIGTERM arrives. Running turns are cancelled and
// recorded before it returns.
func serve(ctx context.Context, g globals, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	words, code, done := parseCommand(fl, serveHelp, args, stdout, stderr)
	if done {
		return code
	}
	if len(words) > 0 {
		return fail(stderr, exitBadInput, fmt.Errorf("serve takes no argument, not %q; bridle serve --help says more", words[0]))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := g.app()
	// Settings that make every session fail are refused before serving:
	// the editor hears that bridle could not start, not a broken agent.
	if err := a.Check(); err != nil {
		g.log.Error("cannot start", "err", err)
		if errors.Is(err, app.ErrFault) {
			return 2
		}
		return 1
	}
	defer a.Close()
	clean, err := a.Serve(ctx, stdin, stdout, map[string]any{"build": g.build.Info()})
	if err != nil {
		g.log.Error("cannot start", "err", err)
		return 1
	}
	if !clean {
		return 1
	}
	return 0
}
