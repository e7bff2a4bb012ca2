package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/rpc"
	"github.com/bridle-dev/bridle/session"
	"github.com/bridle-dev/bridle/store"
)

// serve speaks ACP on stdin/stdout until the editor goes away, sends LSP's
// exit, or a SIGINT/SIGTERM arrives. Running turns are cancelled and
// recorded before it returns.
func serve(ctx context.Context, g globals, stdin io.Reader, stdout io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := store.Open(ctx, g.db)
	if err != nil {
		g.log.Error("cannot open the database", "err", err)
		return 1
	}
	defer st.Close()

	opts := rpc.Options{Version: version, Logger: g.log}
	if g.model == "" {
		opts.Unconfigured = "No model provider is configured: set BRIDLE_MODEL (provider/model-id, e.g. scripted/demo for the offline demo) and restart the agent."
	}
	fault, err := session.ParseFault(os.Getenv("BRIDLE_FAULT"))
	if err != nil {
		g.log.Error("bad fault injection setting", "err", err)
		return 2
	}
	srv := rpc.NewServer(opts)
	mgr := session.NewManager(session.Config{
		Store:        st,
		Client:       srv,
		OpenModel:    openModel,
		DefaultModel: g.model,
		Logger:       g.log,
		Fault:        fault,
	})
	var closer io.Closer
	if c, ok := stdin.(io.Closer); ok {
		closer = c
	}
	if !srv.Serve(ctx, rpc.NewStream(stdin, stdout, closer), mgr) {
		return 1
	}
	return 0
}

// openModel returns the client for a pinned model spec.
func openModel(_ context.Context, spec string) (provider.Provider, error) {
	name, id, ok := strings.Cut(spec, "/")
	if !ok || id == "" {
		return nil, &provider.Error{Provider: "bridle", Kind: provider.ErrModel, Message: fmt.Sprintf("model %q is not written provider/model-id", spec)}
	}
	switch name {
	case "scripted":
		sc, err := scripted.Load(scenarios(), id)
		if err != nil {
			return nil, &provider.Error{Provider: "scripted", Kind: provider.ErrModel, Message: err.Error(), Err: err}
		}
		return scripted.New(sc), nil
	}
	return nil, &provider.Error{Provider: name, Kind: provider.ErrModel, Message: fmt.Sprintf("provider %q is not supported", name)}
}
