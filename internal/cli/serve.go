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
	"github.com/bridle-dev/bridle/session"
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

	// The probe starts a confined process (up to a few hundred
	// milliseconds on a first start): it runs once initialize has been
	// answered, and its report goes with the answers that open a
	// session.
	startProbe := a.StartProbe
	// What initialize announces (the auth method, the model choices) is
	// said before any session names its directory: bridle's own is the
	// best guess. Sessions use their own directory's settings.
	cwd, _ := os.Getwd()
	srv := rpc.NewServer(rpc.Options{Version: g.build.Version, Logger: g.log, Unconfigured: a.Models.Unconfigured(cwd),
		Models: a.Models.Choices(cwd), Meta: map[string]any{"build": g.build.Info()}, AfterInitialize: func() { startProbe() },
		SessionMeta: func() map[string]any { return map[string]any{"sandbox": startProbe()} }})
	var closer io.Closer
	if c, ok := stdin.(io.Closer); ok {
		closer = c
	}
	// The database opens while initialize is answered.
	clean, err := srv.Serve(ctx, rpc.NewStream(stdin, stdout, closer), func(ctx context.Context) (*session.Manager, error) {
		if err := a.Open(ctx); err != nil {
			return nil, err
		}
		return a.Manager(srv, srv), nil
	})
	if err != nil {
		g.log.Error("cannot start", "err", err)
		return 1
	}
	if !clean {
		return 1
	}
	return 0
}
