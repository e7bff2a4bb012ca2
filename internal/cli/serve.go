package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bridle-dev/bridle/internal/app"
)

// serve speaks ACP on stdin/stdout until the editor goes away, sends LSP's
// exit, or a SIGINT/SIGTERM arrives. Running turns are cancelled and
// recorded before it returns.
func serve(ctx context.Context, g globals, stdin io.Reader, stdout io.Writer) int {
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
