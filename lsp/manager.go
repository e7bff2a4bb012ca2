package lsp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/sandbox/box"
)

// Config is what a Manager runs servers with.
type Config struct {
	Box *box.Box
	// Settings returns the configuration that applies in a session
	// directory (its "lsp" section, config.Servers).
	Settings func(cwd string) *config.Config
	// Env is the environment servers start from: a command's (no
	// secret-named variable); each server's caches are added.
	Env func() []string
	// Hidden are the paths servers must not see, as commands: bridle's
	// own files and the credential stores.
	Hidden func() []string
	// CacheDir is bridle's cache directory: each server's caches are in
	// a directory of their own under its lsp/ ("" : no server runs).
	CacheDir string
	// Limits are the sandbox's command limits, which servers take unless
	// their settings say otherwise.
	Limits config.CommandSettings
	// Unconfined says why the box would not keep a server in on this
	// machine (box.Report.KeepsServersOut; "" when it would, nil: ask the
	// box alone): then no server starts and the code tools are not
	// offered.
	Unconfined func() string
	// Files opens, for a server's root, what bridle reads the files the
	// server has open through when they change on disk: the workspace's
	// confined reader (confine.Root), which refuses a link out of it, a
	// hidden path, a pipe or device and a file too large. bridle reads
	// them in its own process, outside the box, and a command can turn
	// an open file into a link to the user's keys. nil: nothing is read;
	// an open file that changes on disk is closed.
	Files func(root string) (Files, error)
	// Look finds a program on PATH (exec.LookPath).
	Look func(string) (string, error)
	Log  *slog.Logger
	// Timeout bounds each request (10 s); StartTimeout a start with its
	// initialize (60 s).
	Timeout, StartTimeout time.Duration
}

// Manager runs the language servers of one bridle process: one per
// workspace root and language (and settings), started on first need,
// shared by every session and subagent on that root, stopped after an
// idle period and by Close. A server that crashes is started again on
// the next need, after a backoff that grows with each failure in a row.
type Manager struct {
	cfg Config

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
	// warned are the versions of the configurations whose unusable "lsp"
	// was logged.
	warned sync.Map
}

// NewManager returns a manager that starts nothing until a session
// needs a server.
func NewManager(cfg Config) *Manager {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, entries: map[string]*entry{}}
}

// entry is one (root, language, settings)'s server over its life: the
// running one, its failures and what is still to be said of them.
type entry struct {
	m    *Manager
	key  string
	spec startSpec

	mu  sync.Mutex
	srv *Server
	// starting is closed when the start under way is done.
	starting chan struct{}
	// failures counts failed starts and crashes in a row; retryAt is
	// when the next start may be tried.
	failures int
	retryAt  time.Time
	// note is a failure not said yet: the next result of a call that
	// uses the server says it, once.
	note string
	// lastUse and idle stop the server once unused for the idle period.
	lastUse time.Time
	idle    time.Duration
	timer   *time.Timer
}

// Backoff of restarts: 1 s after the first failure, doubling, at most
// maxBackoff; after giveUpAfter failures in a row, no more until bridle
// restarts or the settings change.
const (
	maxBackoff  = 5 * time.Minute
	giveUpAfter = 6
	// healthy is how long a server must have run for its crash to count
	// as a first failure again.
	healthy = time.Minute
)

func backoff(failures int) time.Duration {
	d := time.Second << min(failures-1, 20)
	return min(d, maxBackoff)
}

// errUnavailable is get's error while a server waits for its restart, or
// was given up.
var errUnavailable = errors.New("unavailable")

// server returns the running server of the entry, starting it if it is
// not running (and its backoff allows), and the failure not said yet.
// It waits for a start as long as ctx lets it: a start that takes longer
// goes on, and a later call finds the server running.
func (e *entry) server(ctx context.Context) (*Server, string, error) {
	e.mu.Lock()
	e.lastUse = time.Now()
	if e.srv != nil && !e.srv.alive() {
		e.crashed(e.srv)
	}
	if e.srv == nil && e.starting == nil {
		if time.Now().Before(e.retryAt) {
			note := e.note
			e.note = ""
			e.mu.Unlock()
			return nil, note, errUnavailable
		}
		e.starting = make(chan struct{})
		go e.start(e.starting)
	}
	wait := e.starting
	e.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, e.takeNote(), errStarting
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	note := e.note
	e.note = ""
	if e.srv == nil {
		return nil, note, errUnavailable
	}
	return e.srv, note, nil
}

// running returns the server if it runs, without starting it.
func (e *entry) running() *Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil && e.srv.alive() {
		e.lastUse = time.Now()
		return e.srv
	}
	return nil
}

// errStarting is server's error when its start takes longer than the
// caller waits.
var errStarting = errors.New("starting")

// start starts the entry's server, bounded by StartTimeout, and closes
// done when it is running or has failed.
func (e *entry) start(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), e.m.cfg.StartTimeout)
	started := time.Now()
	var srv *Server
	var err error
	if why := e.m.unconfined(); why != "" {
		err = fmt.Errorf("language servers do not run on this machine: the box would not keep them in (%s; bridle doctor says more)", why)
	} else {
		srv, err = start(ctx, e.spec)
	}
	cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starting = nil
	defer close(done)
	if err != nil {
		e.failures++
		e.retryAt = time.Now().Add(backoff(e.failures))
		e.note = e.failed(fmt.Sprintf("could not start: %v", err))
		e.m.cfg.Log.Warn("language server did not start", "language", e.spec.language, "root", e.spec.root, "err", err)
		return
	}
	if e.m.isClosed() {
		go srv.shutdown(time.Second)
		return
	}
	e.m.cfg.Log.Info("language server started", "language", e.spec.language, "root", e.spec.root, "program", e.spec.program,
		"took", time.Since(started).Round(time.Millisecond))
	e.srv = srv
	go e.watch(srv, started)
	e.armIdle()
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// failedNow records, if the watch has not yet, that srv ended, and
// returns the words of it to say now (once).
func (e *entry) failedNow(srv *Server) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv == srv {
		e.crashed(srv)
	}
	n := e.note
	e.note = ""
	return n
}

// takeNote returns the failure not said yet, and forgets it.
func (e *entry) takeNote() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.note
	e.note = ""
	return n
}

// watch waits for srv to end; a crash (not bridle's stop) is counted and
// kept to be said.
func (e *entry) watch(srv *Server, started time.Time) {
	<-srv.Done()
	if srv.stopping.Load() && !srv.hung.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != srv {
		return
	}
	if time.Since(started) > healthy {
		e.failures = 0
	}
	e.crashed(srv)
}

// crashed records that srv ended without bridle stopping it (or that
// bridle ended its connection: its box is killed). e.mu is held.
func (e *entry) crashed(srv *Server) {
	e.srv = nil
	broke, _ := srv.broke.Load().(string)
	if broke != "" {
		srv.kill()
	}
	why := srv.ended()
	switch {
	case srv.hung.Load():
		why = fmt.Sprintf("it stopped answering (%d requests in a row unanswered) and was stopped", hungAfter)
	case broke != "":
		why = broke + ", and was stopped"
	}
	e.failures++
	e.retryAt = time.Now().Add(backoff(e.failures))
	e.note = e.failed("stopped: " + why)
	e.m.cfg.Log.Warn("language server stopped", "language", e.spec.language, "root", e.spec.root, "why", why)
}

// failed words a failure for the model: what happened and when bridle
// tries again. e.mu is held.
func (e *entry) failed(what string) string {
	name := filepath.Base(e.spec.program)
	if e.failures >= giveUpAfter {
		e.retryAt = time.Now().Add(100 * 365 * 24 * time.Hour)
		return fmt.Sprintf("%s %s; after %d failures in a row bridle no longer starts it (until bridle restarts): no diagnostics for %s files", name, what, e.failures, e.spec.language)
	}
	return fmt.Sprintf("%s %s; bridle starts it again on the next edit after %v", name, what, backoff(e.failures).Round(time.Second))
}

// armIdle (re)starts the idle timer. e.mu is held.
func (e *entry) armIdle() {
	if e.timer != nil {
		e.timer.Stop()
	}
	e.timer = time.AfterFunc(e.idle, e.checkIdle)
}

// checkIdle stops the server when no one has used it for the idle
// period, and the entry with it.
func (e *entry) checkIdle() {
	e.mu.Lock()
	if left := e.idle - time.Since(e.lastUse); left > 0 {
		e.timer = time.AfterFunc(left, e.checkIdle)
		e.mu.Unlock()
		return
	}
	srv := e.srv
	e.srv = nil
	e.mu.Unlock()
	e.m.drop(e)
	if srv != nil {
		e.m.cfg.Log.Info("language server idle; stopped", "language", e.spec.language, "root", e.spec.root)
		srv.shutdown(2 * time.Second)
	}
}

// drop forgets an entry.
func (m *Manager) drop(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries[e.key] == e {
		delete(m.entries, e.key)
	}
}

// Close stops every server: shutdown and exit, then the box killed after
// a short grace. No server starts after.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	entries := m.entries
	m.entries = map[string]*entry{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range entries {
		e.mu.Lock()
		srv := e.srv
		e.srv = nil
		if e.timer != nil {
			e.timer.Stop()
		}
		e.retryAt = time.Now().Add(100 * 365 * 24 * time.Hour)
		e.mu.Unlock()
		if srv != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				srv.shutdown(time.Second)
			}()
		}
	}
	wg.Wait()
}

// errClosed is the error of a Manager that was closed.
var errClosed = errors.New("bridle is stopping its language servers")

// entryFor returns the entry of a server s would be for root, made if
// there is none.
func (m *Manager) entryFor(s config.Server, program, root string, section config.LSP) (*entry, error) {
	key := strings.Join(append([]string{root, s.Language, program, string(s.InitOptions), strings.Join(s.AllowHosts, ","),
		fmt.Sprint(s.MemoryMB, s.Processes)}, s.Args...), "\x00")
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	if e := m.entries[key]; e != nil {
		return e, nil
	}
	if m.cfg.CacheDir == "" || m.cfg.Box == nil {
		return nil, errors.New("no cache directory for the language servers' caches")
	}
	// The whole key: two servers of one root and language with other
	// settings must not share their caches.
	sum := sha256.Sum256([]byte(key))
	private := filepath.Join(m.cfg.CacheDir, "lsp", s.Language+"-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(private, 0o700); err != nil {
		return nil, fmt.Errorf("the server's cache directory: %w", err)
	}
	limits := m.cfg.Limits
	if s.MemoryMB != 0 {
		limits.MemoryMB = s.MemoryMB
	}
	processes := s.Processes
	if processes == 0 {
		processes = limits.Processes
	}
	if processes == 0 {
		processes = 1024
	}
	var env []string
	if m.cfg.Env != nil {
		env = m.cfg.Env()
	}
	env = append(env, "XDG_CACHE_HOME="+filepath.Join(private, "cache"), "XDG_DATA_HOME="+filepath.Join(private, "data"),
		"XDG_STATE_HOME="+filepath.Join(private, "state"))
	var hidden []string
	if m.cfg.Hidden != nil {
		hidden = m.cfg.Hidden()
	}
	e := &entry{m: m, key: key, idle: section.Idle(), spec: startSpec{
		language: s.Language, root: root, program: program, args: s.Args, initOptions: s.InitOptions,
		box: m.cfg.Box, timeout: m.cfg.Timeout, log: m.cfg.Log, maxPerFile: MaxPerFile, disk: m.cfg.Files,
		files: append(append([]string(nil), s.Files...), s.RootMarkers...),
		spec: box.Spec{Dir: root, Private: private, Env: env, MemoryBytes: limits.Memory(), Processes: processes,
			AllowHosts: s.AllowHosts, Hidden: hidden},
	}}
	m.entries[key] = e
	return e, nil
}

// unconfined says why no server may start here ("" when one may).
func (m *Manager) unconfined() string {
	if m.cfg.Box != nil {
		if err := m.cfg.Box.KeepsServers(); err != nil {
			return err.Error()
		}
	}
	if m.cfg.Unconfined != nil {
		return m.cfg.Unconfined()
	}
	return ""
}
