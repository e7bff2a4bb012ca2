package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bridle-dev/bridle/internal/app"
	"github.com/bridle-dev/bridle/rpc"
)

// serve speaks ACP on stdin/stdout until the editor goes away, sends LSP's
// exit, or a SIGINT/SIGTERM arrives. Running turns are cancelled and
// recorded before it returns.
func serve(ctx context.Context, g globals, stdin io.Reader, stdout io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := g.app()
	if err := a.Open(ctx); err != nil {
		g.log.Error("cannot start", "err", err)
		if errors.Is(err, app.ErrFault) {
			return 2
		}
		return 1
	}
	defer a.Close()

	// The probe runs in the background; initialize reports its missing
	// layers.
	probe := a.StartProbe()
	// What initialize announces (the auth method, the model choices) is
	// said before any session names its directory: bridle's own is the
	// best guess. Sessions use their own directory's settings.
	cwd, _ := os.Getwd()
	srv := rpc.NewServer(rpc.Options{Version: g.build.Version, Logger: g.log, Unconfigured: a.Models.Unconfigured(cwd),
		Models: a.Models.Choices(cwd), Meta: map[string]any{"sandbox": probe, "build": g.build.Info()}})
	mgr := a.Manager(srv)
	var closer io.Closer
	if c, ok := stdin.(io.Closer); ok {
		closer = c
	}
	if !srv.Serve(ctx, rpc.NewStream(stdin, stdout, closer), mgr) {
		return 1
	}
	return 0
}
