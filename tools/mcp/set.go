package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/tools"
)

// Options configure the servers of one session.
type Options struct {
	// Dir is the working directory of stdio servers (the session's cwd),
	// also announced to servers as their root.
	Dir string
	// Environ is the environment stdio servers start from, before the
	// editor's env entries; nil: bridle's own. Secret-named variables
	// (redact.SecretName) are left out either way: a server gets a key
	// only when the editor's entry for it names one.
	Environ []string
	// ConnectTimeout bounds starting a server, its handshake and the
	// listing of its tools; 0: 30 s.
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call; 0: 10 minutes.
	CallTimeout time.Duration
	// Caps bound what a call returns to the model; zero: tools.DefaultCaps.
	Caps tools.Caps
	// Version is bridle's, sent to servers in the handshake.
	Version string
	Logger  *slog.Logger
	// Notify is told when a server cannot be used: it failed to start, or
	// it stopped while the session used it. It is called at most once per
	// server, from any goroutine.
	Notify func(server string, err error)
}

// Set is the MCP servers of one session.
type Set struct {
	opts    Options
	servers []Server
	conns   []*conn
	ready   chan struct{}
	// ctx ends when the set is closed, aborting connections under way.
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

// Start connects to servers in the background; Ready waits for them.
// servers must have passed Check. A server that fails is reported to
// Notify and left out; the others work.
func Start(servers []Server, o Options) *Set {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Set{opts: o, servers: slices.Clone(servers), ready: make(chan struct{}), ctx: ctx, cancel: cancel}
	var wg sync.WaitGroup
	for _, sv := range servers {
		c := &conn{set: s, spec: sv, id: sanitize(sv.Name), stderr: &tail{max: 4 << 10}, dead: make(chan struct{})}
		s.conns = append(s.conns, c)
		wg.Go(c.connect)
	}
	go func() {
		wg.Wait()
		close(s.ready)
	}()
	return s
}

// Servers returns the servers the set was started with.
func (s *Set) Servers() []Server {
	if s == nil {
		return nil
	}
	return s.servers
}

// Ready waits until every server is connected or has failed, or ctx ends.
func (s *Set) Ready(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Tools returns the tools of the servers that are connected now, sorted
// by name so the catalogue (part of the cached prompt prefix) is stable.
func (s *Set) Tools() []tools.Tool {
	if s == nil {
		return nil
	}
	var out []tools.Tool
	for _, c := range s.conns {
		for _, t := range c.liveTools() {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b tools.Tool) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// Why explains why an MCP tool name is not offered, for the model: its
// server failed, stopped, or never had such a tool.
func (s *Set) Why(name string) string {
	if s != nil {
		for _, c := range s.conns {
			if !strings.HasPrefix(name, "mcp__"+c.id+"__") {
				continue
			}
			if err := c.failure(); err != nil {
				return fmt.Sprintf("tool %q is not available: its MCP server %q %v. The session goes on without it", name, c.spec.Name, err)
			}
			return fmt.Sprintf("tool %q is not available: MCP server %q has no such tool; see the catalogue for its tools", name, c.spec.Name)
		}
	}
	return fmt.Sprintf("tool %q is not available: no MCP server of this session provides it (the editor names the servers when it opens the session)", name)
}

// Close stops every server: stdio servers get their stdin closed, then
// SIGTERM, then SIGKILL, and their process group is killed, so nothing a
// server started outlives the session. It waits for them to exit.
func (s *Set) Close() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.cancel()
		var wg sync.WaitGroup
		for _, c := range s.conns {
			wg.Go(c.close)
		}
		wg.Wait()
	})
}

// conn is one server.
type conn struct {
	set    *Set
	spec   Server
	id     string // the sanitized name used in tool names
	stderr *tail

	// dead is closed once failed is set.
	dead chan struct{}

	mu      sync.Mutex
	cs      *sdk.ClientSession
	tree    *serverTree // a stdio server's processes
	tools   []*Tool
	failed  error // why the server is unusable, once it is
	closing bool
}

func (c *conn) log() *slog.Logger { return c.set.opts.Logger.With("mcp_server", c.spec.Name) }

// connect starts the server, shakes hands and lists its tools.
func (c *conn) connect() {
	o := c.set.opts
	ctx, cancel := context.WithTimeout(c.set.ctx, o.ConnectTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "bridle", Version: o.Version}, &sdk.ClientOptions{
		Logger:                 c.log(),
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { go c.refresh() },
	})
	if o.Dir != "" {
		client.AddRoots(&sdk.Root{URI: rootURI(o.Dir), Name: "workspace"})
	}
	var transport sdk.Transport
	switch c.spec.transport() {
	case HTTP:
		transport = &sdk.StreamableClientTransport{Endpoint: c.spec.URL, HTTPClient: &http.Client{Transport: headers(c.spec.Headers)}, MaxRetries: -1}
	default:
		cmd := exec.Command(c.spec.Command, c.spec.Args...)
		cmd.Dir = o.Dir
		cmd.Env = serverEnv(o.Environ, c.spec.Env)
		cmd.Stderr = c.stderr
		// Its own process tree (a process group; a Job Object on
		// Windows), so closing kills whatever it started, and so does
		// bridle's death where the system allows (a server also exits
		// when its stdin, bridle's pipe, closes).
		tree := newServerTree(cmd)
		// A process the server started may hold its stderr open after it
		// exits; Wait must not wait for that one too.
		cmd.WaitDelay = 250 * time.Millisecond
		c.mu.Lock()
		c.tree = tree
		c.mu.Unlock()
		transport = tree.transport(&sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second})
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err == nil {
		c.mu.Lock()
		if c.closing {
			err = errors.New("closed while connecting")
		} else {
			c.cs = cs
		}
		c.mu.Unlock()
		if err != nil {
			cs.Close()
		}
	}
	if err == nil {
		err = c.list(ctx)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("did not answer within %s", o.ConnectTimeout)
		}
		c.fail(fmt.Errorf("could not be started: %w%s", err, c.stderr.suffix()))
		c.kill()
		return
	}
	c.log().Info("MCP server connected", "tools", len(c.liveTools()))
	go c.watch(cs)
}

// list (re)reads the server's tools.
func (c *conn) list(ctx context.Context) error {
	c.mu.Lock()
	cs := c.cs
	c.mu.Unlock()
	if cs == nil {
		return errors.New("not connected")
	}
	var listed []*Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list its tools: %w", err)
		}
		listed = append(listed, newTool(c, t))
	}
	c.mu.Lock()
	c.tools = listed
	c.mu.Unlock()
	return nil
}

// refresh re-lists the tools after the server said they changed.
func (c *conn) refresh() {
	ctx, cancel := context.WithTimeout(c.set.ctx, c.set.opts.ConnectTimeout)
	defer cancel()
	if err := c.list(ctx); err != nil {
		c.log().Warn("MCP server's tools not refreshed", "err", err)
	}
}

// watch waits for the connection to end; unless bridle closed it, the
// server stopped on its own, and the session is told.
func (c *conn) watch(cs *sdk.ClientSession) {
	cs.Wait()
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return
	}
	// Reap the process (its stdin is closed; it is gone or going) to say
	// how it ended.
	werr := cs.Close()
	why := "stopped"
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		why = "stopped (" + ee.ProcessState.String() + ")"
	}
	c.fail(fmt.Errorf("%s%s", why, c.stderr.suffix()))
	c.kill()
}

// fail records why the server is unusable and tells the session, once.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.failed != nil || c.closing {
		c.mu.Unlock()
		return
	}
	c.failed = err
	c.tools = nil
	close(c.dead)
	c.mu.Unlock()
	c.log().Warn("MCP server unusable", "err", err)
	if n := c.set.opts.Notify; n != nil {
		n(c.spec.Name, err)
	}
}

// deadErr waits a little for the watcher to record why the connection
// ended (it reaps the process first), and returns it.
func (c *conn) deadErr() error {
	select {
	case <-c.dead:
	case <-time.After(3 * time.Second):
	}
	return c.failure()
}

func (c *conn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

func (c *conn) liveTools() []*Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != nil {
		return nil
	}
	return c.tools
}

func (c *conn) session() (*sdk.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != nil {
		return nil, fmt.Errorf("MCP server %q %v", c.spec.Name, c.failed)
	}
	if c.cs == nil {
		return nil, fmt.Errorf("MCP server %q is not connected", c.spec.Name)
	}
	return c.cs, nil
}

func (c *conn) close() {
	c.mu.Lock()
	c.closing = true
	cs := c.cs
	c.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
	c.kill()
}

// kill ends whatever is left of a stdio server's processes.
func (c *conn) kill() {
	c.mu.Lock()
	tree := c.tree
	c.mu.Unlock()
	if tree != nil {
		tree.kill()
	}
}

// rootURI is the file URI of the absolute directory dir (RFC 8089):
// file:///home/u/w, file:///C:/Users/u/w, escaped where a URI must be.
func rootURI(dir string) string {
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a drive letter
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// serverEnv is base without secret-named variables, then the editor's.
func serverEnv(base []string, extra []Var) []string {
	var env []string
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !redact.SecretName(name) {
			env = append(env, kv)
		}
	}
	for _, v := range extra {
		env = append(env, v.Name+"="+v.Value)
	}
	return env
}

// headers adds an HTTP server's headers to every request.
type headers []Var

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h) > 0 {
		r = r.Clone(r.Context())
		for _, v := range h {
			r.Header.Set(v.Name, v.Value)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// tail keeps the end of a server's stderr, to say why it failed.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// suffix is ": its stderr said: …" with the last lines, or "".
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "; its stderr ends with: " + strings.Join(lines, " | ")
}
