package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/rpc"
	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/sandbox/box"
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

	// One box for the process: it probes the machine once per boot (the
	// answer is cached). The probe runs in the background; initialize
	// reports its missing layers.
	bx := box.New(box.Options{})
	defer bx.Close()
	probe := sandbox.StartProbeCached(bx, cacheDir())
	mods := g.models()
	sbx := mods.Sandbox()
	makeOwnDirs(g)
	// What initialize announces (the auth method, the model choices) is
	// said before any session names its directory: bridle's own is the
	// best guess. Sessions use their own directory's settings.
	cwd, _ := os.Getwd()
	opts := rpc.Options{Version: version, Logger: g.log, Unconfigured: mods.Unconfigured(cwd), Models: mods.Choices(cwd),
		Meta: map[string]any{"sandbox": probe}}
	fault, err := session.ParseFault(os.Getenv("BRIDLE_FAULT"))
	if err != nil {
		g.log.Error("bad fault injection setting", "err", err)
		return 2
	}
	if err := mods.CheckContext(); err != nil {
		g.log.Error("cannot configure the context window", "err", err)
		return 1
	}
	srv := rpc.NewServer(opts)
	mgr := session.NewManager(session.Config{
		Store:        st,
		Client:       srv,
		OpenModel:    reuseScripted(mods.Open),
		DefaultModel: mods.DefaultFor,
		WindowFor:    mods.WindowFor,
		Logger:       g.log,
		Fault:        fault,
		Tools:        sandbox.NewTools(sbx, bx),
		Hidden:       hiddenPaths(g, sbx),
		Own:          ownPaths(g),
		DataDir:      filepath.Dir(g.db),
		Project:      mods.ProjectInstructions,
		Version:      version,
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

// reuseScripted opens each scripted model once per process, so that a
// sequential scenario plays on from one turn to the next. Other models are
// opened for every turn: their settings may change in between.
func reuseScripted(open session.ModelOpener) session.ModelOpener {
	var mu sync.Mutex
	opened := map[string]provider.Provider{}
	return func(ctx context.Context, spec, cwd string) (provider.Provider, error) {
		if !strings.HasPrefix(spec, "scripted/") {
			return open(ctx, spec, cwd)
		}
		mu.Lock()
		defer mu.Unlock()
		if p, ok := opened[spec]; ok {
			return p, nil
		}
		p, err := open(ctx, spec, cwd)
		if err == nil {
			opened[spec] = p
		}
		return p, err
	}
}

// hiddenPaths are what no tool may read or write and commands do not see:
// bridle's own files (ownPaths) and the user's credential stores.
func hiddenPaths(g globals, s sandbox.Settings) []string {
	home, _ := os.UserHomeDir()
	return sandbox.HiddenPaths(s.Command, home, ownPaths(g))
}

// ownPaths are bridle's own settings, database, artifacts and cache,
// hidden whatever the workspace (a session at $HOME or / must not rewrite
// another session's log or widen its own box), and never made visible.
// They are made absolute: a relative --db is opened from bridle's working
// directory, and would otherwise be dropped from the list.
func ownPaths(g globals) []string {
	var own []string
	if d := cacheDir(); d != "" {
		own = append(own, d)
	}
	if p := config.UserPath(os.Getenv); p != "" {
		own = append(own, filepath.Dir(p))
	}
	if data := filepath.Dir(g.db); filepath.Base(data) == "bridle" {
		// bridle's own data directory: all of it.
		own = append(own, data)
	} else {
		// A database put somewhere else (--db, BRIDLE_DB): its files only,
		// since the directory may hold the user's work.
		own = append(own, g.db, g.db+"-wal", g.db+"-shm", g.db+"-journal", filepath.Join(data, "artifacts"))
	}
	for i, p := range own {
		if a, err := filepath.Abs(p); err == nil {
			own[i] = a
		}
	}
	return own
}

// makeOwnDirs creates bridle's own directories that may not exist yet
// (its settings, cache and artifacts directories), so that the box can
// hide them: a path that does not exist cannot be covered, and a command
// with the workspace at $HOME could create ~/.config/bridle/settings.json
// and widen the next session's box.
func makeOwnDirs(g globals) {
	dirs := []string{cacheDir(), filepath.Join(filepath.Dir(g.db), "artifacts")}
	if p := config.UserPath(os.Getenv); p != "" {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if d != "" {
			os.MkdirAll(d, 0o700)
		}
	}
}

// cacheDir is $XDG_CACHE_HOME/bridle (default ~/.cache/bridle), or "" if
// there is no home to put it in.
func cacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "bridle")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "bridle")
}
