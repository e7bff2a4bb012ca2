package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/lsp"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/sandbox/fslock"
	"github.com/bridle-dev/bridle/session"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// Options are what the command line decides about the stack.
type Options struct {
	DB      string // the database file
	Model   string // --model, else $BRIDLE_MODEL
	Version string // bridle's version, recorded in each session
	Log     *slog.Logger
}

// App is the whole stack a session runs on, built once for every command
// that runs sessions (serve, run, rewind): the models and settings, the store,
// the box, the tools, bridle's own and hidden paths, the fault hook.
type App struct {
	Options
	Models  *Models
	Store   *store.Store
	Box     *box.Box
	Sandbox config.Sandbox

	// Code runs the language servers (nil until Open).
	Code *lsp.Manager

	fault *session.Fault
	// locks keeps the editor's file calls and commands apart (nil: the
	// lock file could not be made, and the editor's fs is not used).
	locks *fslock.Locks
	// probe is started once, by the first to need it (initialize's
	// answer or the first command a session runs).
	probeOnce sync.Once
	probe     *box.Probe
	// paths fills Sandbox, hidden and own once, from the user's
	// settings: the sessions' tools and roots and the project files
	// bridle reads for itself use the same lists.
	pathsOnce   sync.Once
	hidden, own []string
}

// ErrFault is wrapped by Open's error when BRIDLE_FAULT cannot be parsed.
var ErrFault = errors.New("bad fault injection setting (BRIDLE_FAULT)")

// New resolves the configuration; it opens nothing, so a command can
// refuse early (no model configured) without creating the database.
func New(o Options) *App {
	a := &App{Options: o, Models: &Models{Flag: o.Model, Getenv: os.Getenv, Scenarios: scripted.Scenarios(), Log: o.Log, Wrap: provider.MaybeRecord}}
	a.Models.Hidden = a.paths
	return a
}

// paths returns the hidden paths (HiddenPaths, from the user's sandbox
// settings) and bridle's own (OwnPaths), the same for every session's
// file tools and for the project files bridle reads for itself.
func (a *App) paths() (hidden, own []string) {
	a.pathsOnce.Do(func() {
		a.Sandbox = a.Models.Sandbox()
		a.hidden, a.own = HiddenPaths(a.DB, a.Sandbox), OwnPaths(a.DB)
	})
	return a.hidden, a.own
}

// Check checks the settings that apply to every session (the context
// window's thresholds, the fault hook) and makes the box, which opens
// nothing until it runs a command; it touches no file but the settings.
func (a *App) Check() error {
	if a.Box != nil {
		return nil
	}
	fault, err := session.ParseFault(os.Getenv("BRIDLE_FAULT"))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFault, err)
	}
	if err := a.Models.CheckContext(); err != nil {
		return fmt.Errorf("cannot configure the context window: %w", err)
	}
	a.fault = fault
	a.Box = box.New(box.Options{})
	return nil
}

// Open runs Check, opens the store, and creates bridle's own directories
// so that the box can hide them. Close releases what it opened.
func (a *App) Open(ctx context.Context) error {
	if err := a.Check(); err != nil {
		return err
	}
	st, err := store.Open(ctx, a.DB)
	if err != nil {
		return err
	}
	a.Store = st
	a.paths()
	makeOwnDirs(a.DB)
	a.locks = openLocks(a.Log)
	a.Code = a.languageServers()
	return nil
}

// languageServers makes the manager of the language servers, which
// starts none until a session's edit needs one. They run in the box
// commands run in, with a command's environment and limits, and the same
// hidden paths.
func (a *App) languageServers() *lsp.Manager {
	hidden, own := a.paths()
	return lsp.NewManager(lsp.Config{
		Box:        a.Box,
		Settings:   a.Models.Config,
		Env:        func() []string { return tools.CommandEnv(a.Sandbox.Command, os.Environ()) },
		Hidden:     func() []string { return hidden },
		CacheDir:   CacheDir(),
		Limits:     a.Sandbox.Command,
		Files:      func(root string) (lsp.Files, error) { return confinedFiles(root, hidden, own) },
		Look:       exec.LookPath,
		Log:        a.Log,
		Unconfined: func() string { return a.StartProbe().Report().KeepsServersOut() },
	})
}

// confinedFiles is how bridle reads a server's files on disk: as a
// session's tools read them, with the same hidden paths.
func confinedFiles(root string, hidden, own []string) (lsp.Files, error) {
	r, err := confine.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	r.Hide(hidden...)
	r.HideOwn(own...)
	return r, nil
}

// openLocks opens the lock file every bridle process of the user shares
// (sandbox/fslock), in bridle's cache directory, which commands cannot
// see. Without it the editor's fs is not used: the files are read and
// written on disk.
func openLocks(log *slog.Logger) *fslock.Locks {
	dir := CacheDir()
	if dir == "" {
		log.Warn("no cache directory for the lock between the editor's file calls and commands: files are read and written on disk, not through the editor")
		return nil
	}
	l, err := fslock.Open(filepath.Join(dir, "fs.lock"))
	if err != nil {
		log.Warn("files are read and written on disk, not through the editor: the lock between the editor's file calls and commands cannot be taken", "err", err)
		return nil
	}
	return l
}

// StartProbe probes the machine's sandbox layers in the background, once
// per boot (the answer is cached); later calls return the same probe.
func (a *App) StartProbe() *box.Probe {
	a.probeOnce.Do(func() { a.probe = box.StartProbeCached(a.Box, CacheDir()) })
	return a.probe
}

// Manager builds the session manager that reports to client; files is
// the editor's file system, nil when there is no editor.
func (a *App) Manager(client session.Client, files session.FileClient) *session.Manager {
	return session.NewManager(a.config(client, files))
}

// config is the session manager's configuration on this stack.
func (a *App) config(client session.Client, files session.FileClient) session.Config {
	hidden, own := a.paths()
	sbx, bx := a.Sandbox, a.Box
	return session.Config{
		Store:        a.Store,
		Client:       client,
		Files:        files,
		OpenModel:    reuseScripted(a.Models.Open),
		DefaultModel: a.Models.DefaultFor,
		WindowFor:    a.Models.WindowFor,
		Logger:       a.Log,
		Fault:        a.fault,
		Tools:        tools.NewTools(sbx, bx),
		Hidden:       hidden,
		Own:          own,
		DataDir:      filepath.Dir(a.DB),
		Project:      a.Models.ProjectInstructions,
		Extensions:   a.Extensions,
		Hooks:        func(cwd string) []config.Hook { return a.Models.Config(cwd).Settings.Hooks },
		Notices:      func(cwd string) []string { return a.Models.Config(cwd).Settings.Trust.Notices },
		Version:      a.Version,
		Locks:        a.locks,
		Unconfined:   func() string { return a.StartProbe().Report().Unconfined() },
		Code:         a.code,
		CodeChanged:  a.codeChanged,
	}
}

// code is the language servers' view for a session's directories; nil
// before Open.
func (a *App) code(dirs []string) tools.Code {
	if a.Code == nil {
		return nil
	}
	return a.Code.Workspace(dirs)
}

func (a *App) codeChanged(dirs, paths []string) {
	if a.Code != nil {
		a.Code.FilesChanged(dirs, paths)
	}
}

// Close stops the language servers, then closes the box and the store.
func (a *App) Close() {
	if a.Code != nil {
		a.Code.Close()
	}
	if a.Box != nil {
		a.Box.Close()
	}
	if a.Store != nil {
		a.Store.Close()
	}
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
