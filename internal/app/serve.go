package app

import (
	"context"
	"io"
	"os"

	"github.com/bridle-dev/bridle/rpc"
	"github.com/bridle-dev/bridle/session"
)

// Serve speaks ACP on stdin and stdout until the editor goes away, sends
// LSP's exit, or ctx ends; meta goes in initialize's _meta.bridle. Check
// must have succeeded; the store opens while initialize is answered.
// clean is false when bridle should exit 1 (exit without shutdown, or a
// store that could not open).
func (a *App) Serve(ctx context.Context, stdin io.Reader, stdout io.Writer, meta map[string]any) (clean bool, err error) {
	// The probe starts a confined process (up to a few hundred
	// milliseconds on a first start): it runs once initialize has been
	// answered, and its report goes with the answers that open a
	// session.
	startProbe := a.StartProbe
	// What initialize announces (the auth method, the model choices) is
	// said before any session names its directory: bridle's own is the
	// best guess. Sessions use their own directory's settings.
	cwd, _ := os.Getwd()
	srv := rpc.NewServer(rpc.Options{Version: a.Version, Logger: a.Log, Unconfigured: a.Models.Unconfigured(cwd),
		Models: a.Models.Choices(cwd), Meta: meta, AfterInitialize: func() { startProbe() },
		SessionMeta: func() map[string]any { return map[string]any{"sandbox": startProbe()} }})
	var closer io.Closer
	if c, ok := stdin.(io.Closer); ok {
		closer = c
	}
	// The database opens while initialize is answered.
	return srv.Serve(ctx, rpc.NewStream(stdin, stdout, closer), func(ctx context.Context) (*session.Manager, error) {
		if err := a.Open(ctx); err != nil {
			return nil, err
		}
		return a.Manager(srv, srv), nil
	})
}
