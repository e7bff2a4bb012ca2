package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/bridle-dev/bridle/sandbox/box"
)

// Server is one language server running in the box for a root: the
// connection to it, the documents it was given and what it said of them.
// Request carries any LSP call; the types are go.lsp.dev/protocol's.
type Server struct {
	Language string
	// Root is the directory it serves (the workspace folder it was
	// given), Program what runs.
	Root, Program string

	proc *box.Process
	conn *jsonrpc2.Conn
	log  *slog.Logger
	// timeout bounds each request.
	timeout time.Duration
	// stderr keeps the end of what the server wrote to its stderr, for
	// the words of a crash.
	stderr *tail
	caps   capabilities
	diags  *diagnostics
	docs   documents
	// progress counts the work the server said it began and has not
	// ended ($/progress): it is loading while above 0.
	progress atomic.Int32
	// timeouts counts the requests in a row that went unanswered: a
	// server that stops answering is stopped (hung).
	timeouts atomic.Int32
	// watch are the patterns of the files whose changes on disk the
	// server registered for (workspace/didChangeWatchedFiles).
	watchMu sync.Mutex
	watch   map[string][]string
	// told are the files named to the server's watch, files the patterns
	// of the files it serves (for when it registers none).
	told  map[string]bool
	files []string
	// dropped counts messages cut off or dropped, for the log.
	dropped atomic.Int64
	// stopping says the end is bridle's doing, not a crash; hung that
	// bridle stopped it for not answering, which counts as one.
	stopping, hung atomic.Bool
	ids            atomic.Int64
	// disk counts the batches of changes on disk the server was told of.
	disk atomic.Uint64
	// broke says why bridle ended the connection (a write failed): the
	// server is then stopped, as after a crash.
	broke atomic.Value
	// queue holds the writes waiting their turn (serial); batches the
	// watcher's batches waiting theirs (changes).
	queue   chan func()
	batches chan []string
	// onDisk opens the reader of its files on disk (Config.Files).
	onDisk func(root string) (Files, error)
}

// capabilities is what bridle reads of the server's: the rest stays in
// raw for the tools that need more.
type capabilities struct {
	raw json.RawMessage
	// pull says the server answers textDocument/diagnostic.
	pull bool
	// noSync says the server takes no document contents.
	noSync bool
}

// ErrTimeout is what a request's error is (errors.Is) when the server
// did not answer it within the time per request.
var ErrTimeout = errors.New("request timed out")

// hungAfter is how many requests in a row may go unanswered before the
// server is taken for hung and stopped.
const hungAfter = 3

// startSpec is what starting a server takes.
type startSpec struct {
	language, root, program string
	args                    []string
	initOptions             json.RawMessage
	box                     *box.Box
	spec                    box.Spec // the box's: Dir, Private, Env, limits, hosts, hidden
	timeout                 time.Duration
	log                     *slog.Logger
	maxPerFile              int
	// files are the patterns of the files it serves, and its root
	// markers: the files it hears of when it registers no watch.
	files []string
	// disk opens the reader of the server's files on disk (Config.Files).
	disk func(root string) (Files, error)
}

// start starts the server in the box and initializes it. ctx bounds the
// whole start; the server outlives it.
func start(ctx context.Context, s startSpec) (*Server, error) {
	srv := &Server{Language: s.language, Root: s.root, Program: s.program, log: s.log, timeout: s.timeout, files: s.files, onDisk: s.disk,
		stderr: newTail(8 << 10), watch: map[string][]string{}, queue: make(chan func(), 64), batches: make(chan []string, 64)}
	srv.diags = newDiagnostics(s.maxPerFile, srv.docs.versionOf)
	spec := s.spec
	spec.Args = append([]string{s.program}, s.args...)
	spec.Output = srv.stderr
	proc, err := s.box.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	srv.proc = proc
	st := newStream(proc.Stdout, proc.Stdin, func() error {
		proc.Stdin.Close()
		return proc.Stdout.Close()
	}, func(why string) {
		if srv.dropped.Add(1) <= 10 {
			s.log.Warn("language server message dropped", "language", s.language, "root", s.root, "why", why)
		}
	}, func(err error) {
		if !srv.stopping.Load() {
			srv.broke.CompareAndSwap(nil, err.Error())
		}
	})
	srv.conn = jsonrpc2.NewConn(context.Background(), st, jsonrpc2.HandlerWithError(srv.handle),
		jsonrpc2.SetLogger(logger{s.log}))
	go srv.writes()
	go srv.changes()
	if err := srv.initialize(ctx, s.initOptions); err != nil {
		srv.kill()
		if why := srv.ended(); why != "" {
			err = fmt.Errorf("%w (%s)", err, why)
		}
		return nil, err
	}
	return srv, nil
}

// clientCapabilities are what bridle tells servers it does: full text
// sync, versioned published and pulled diagnostics, progress, watched
// files, configuration and workspace folders.
const clientCapabilities = `{
	"workspace": {
		"configuration": true,
		"workspaceFolders": true,
		"didChangeWatchedFiles": {"dynamicRegistration": true},
		"workspaceEdit": {"documentChanges": true}
	},
	"textDocument": {
		"synchronization": {"dynamicRegistration": false, "didSave": false},
		"publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
		"diagnostic": {"dynamicRegistration": false, "relatedDocumentSupport": false},
		"hover": {"contentFormat": ["plaintext", "markdown"]},
		"definition": {}, "references": {}, "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
		"rename": {"prepareSupport": true}
	},
	"window": {"workDoneProgress": true},
	"general": {"positionEncodings": ["utf-16"]}
}`

// initializeParams are protocol's, with the capabilities as bridle
// writes them (the protocol package lacks the pulled diagnostics'), and
// no process id: bridle's is not in the box's PID namespace, and a
// server that watches its parent by it (vscode-languageserver's, in
// typescript-language-server: kill(pid, 0) every 3 s) would take bridle
// for dead and exit. The box ends with bridle all the same.
type initializeParams struct {
	protocol.InitializeParams
	ProcessID    *int32          `json:"processId"`
	Capabilities json.RawMessage `json:"capabilities"`
}

func (s *Server) initialize(ctx context.Context, opts json.RawMessage) error {
	root := uri.File(s.Root)
	p := initializeParams{Capabilities: json.RawMessage(clientCapabilities)}
	p.ClientInfo = &protocol.ClientInfo{Name: "bridle"}
	p.RootURI = protocol.DocumentURI(root)
	p.RootPath = s.Root
	p.WorkspaceFolders = []protocol.WorkspaceFolder{{URI: string(root), Name: filepath.Base(s.Root)}}
	if len(opts) > 0 {
		p.InitializationOptions = opts
	}
	var res struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if err := s.Request(ctx, protocol.MethodInitialize, p, &res); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	s.caps = readCapabilities(res.Capabilities)
	return s.Notify(ctx, protocol.MethodInitialized, struct{}{})
}

// readCapabilities reads what bridle uses of a server's capabilities.
func readCapabilities(raw json.RawMessage) capabilities {
	c := capabilities{raw: raw}
	var caps struct {
		TextDocumentSync   json.RawMessage `json:"textDocumentSync"`
		DiagnosticProvider json.RawMessage `json:"diagnosticProvider"`
	}
	json.Unmarshal(raw, &caps)
	c.pull = len(caps.DiagnosticProvider) > 0 && string(caps.DiagnosticProvider) != "null" && string(caps.DiagnosticProvider) != "false"
	switch sync := strings.TrimSpace(string(caps.TextDocumentSync)); {
	case sync == "0":
		c.noSync = true
	case strings.HasPrefix(sync, "{"):
		var o struct {
			OpenClose *bool `json:"openClose"`
			Change    *int  `json:"change"`
		}
		json.Unmarshal(caps.TextDocumentSync, &o)
		c.noSync = o.OpenClose != nil && !*o.OpenClose && (o.Change == nil || *o.Change == 0)
	}
	return c
}

// Capabilities are the server's, as it answered initialize.
func (s *Server) Capabilities() json.RawMessage { return s.caps.raw }

// Request sends a request and waits for its answer into result (nil:
// dropped), at most the server's time per request, less if ctx says. A
// request given up is withdrawn ($/cancelRequest); a server that leaves
// hungAfter requests in a row unanswered is stopped as hung, and a later
// use starts it again.
func (s *Server) Request(ctx context.Context, method string, params, result any) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// bridle picks the id, to withdraw the request by it.
	id := jsonrpc2.ID{Str: fmt.Sprintf("b%d", s.ids.Add(1)), IsString: true}
	var call jsonrpc2.Waiter
	err := s.serial(ctx, func() (err error) {
		call, err = s.conn.DispatchCall(context.Background(), method, params, jsonrpc2.PickID(id))
		return err
	})
	if err != nil && ctx.Err() == nil {
		return s.connErr(err)
	}
	if err == nil {
		err = call.Wait(ctx, result)
	}
	switch {
	case err == nil:
		s.timeouts.Store(0)
		return nil
	case ctx.Err() != nil:
		go s.conn.Notify(context.Background(), "$/cancelRequest", map[string]any{"id": id.Str})
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			if s.timeouts.Add(1) >= hungAfter && !s.hung.Swap(true) {
				s.log.Warn("language server stopped answering; stopping it", "language", s.Language, "root", s.Root)
				go s.kill()
			}
			return fmt.Errorf("%s did not answer %s within %v: %w", s.name(), method, s.timeout, ErrTimeout)
		}
		return ctx.Err()
	}
	return s.connErr(err)
}

// Notify sends a notification; the caller waits for the write at most
// as long as ctx says.
func (s *Server) Notify(ctx context.Context, method string, params any) error {
	err := s.serial(ctx, func() error { return s.conn.Notify(context.Background(), method, params) })
	var ns notSent
	switch {
	case errors.As(err, &ns):
		return err
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%s is not reading what bridle sends: %w", s.name(), ctx.Err())
	}
	return s.connErr(err)
}

// serial runs write, a message's write, after those sent before it, in
// the order they were sent; the caller waits for it at most as long as
// ctx says. The write itself may wait for a server that does not read
// its input (up to the stream's write timeout, after which the
// connection ends): the caller does not.
func (s *Server) serial(ctx context.Context, write func() error) error {
	if ctx.Err() != nil {
		return notSent{ctx.Err()}
	}
	done := make(chan error, 1)
	select {
	case s.queue <- func() { done <- write() }:
	case <-s.Done():
		return jsonrpc2.ErrClosed
	case <-ctx.Done():
		return notSent{ctx.Err()}
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// notSent is serial's error when the message was not queued at all: the
// server never sees it.
type notSent struct{ error }

func (e notSent) Unwrap() error { return e.error }

// writes runs the queued writes until the connection ends.
func (s *Server) writes() {
	for {
		select {
		case w := <-s.queue:
			w()
		case <-s.Done():
			return
		}
	}
}

// connErr words an error of the connection: a closed one means the
// server is gone.
func (s *Server) connErr(err error) error {
	if errors.Is(err, jsonrpc2.ErrClosed) {
		if why := s.ended(); why != "" {
			return fmt.Errorf("%s stopped: %s", s.name(), why)
		}
		return fmt.Errorf("%s stopped", s.name())
	}
	return err
}

// name is the server's program, for messages.
func (s *Server) name() string { return filepath.Base(s.Program) }

// Done is closed when the server is gone (it exited, crashed, or was
// stopped), with its connection.
func (s *Server) Done() <-chan struct{} { return s.conn.DisconnectNotify() }

// alive says the server has not gone.
func (s *Server) alive() bool {
	select {
	case <-s.Done():
		return false
	default:
		return true
	}
}

// ended says how the server ended ("" while it runs): its exit and the
// end of what it wrote to stderr.
func (s *Server) ended() string {
	select {
	case <-s.proc.Done():
	case <-time.After(2 * time.Second):
		return ""
	}
	o := s.proc.Outcome()
	var why string
	switch {
	case o.MemoryLimitHit:
		why = fmt.Sprintf("it reached its memory limit of %d MiB", o.MemoryLimit>>20)
	case o.Signal != "":
		why = "killed by " + o.Signal
	default:
		why = fmt.Sprintf("exit status %d", o.ExitCode)
	}
	if t := s.stderr.last(3, 300); t != "" {
		why += "; it said: " + t
	}
	return why
}

// shutdown asks the server to stop (shutdown, exit), within grace, then
// kills what is left of its box.
func (s *Server) shutdown(grace time.Duration) {
	s.stopping.Store(true)
	if s.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		if s.conn.Call(ctx, protocol.MethodShutdown, nil, nil) == nil {
			s.conn.Notify(ctx, protocol.MethodExit, nil)
			select {
			case <-s.proc.Done():
			case <-ctx.Done():
			}
		}
		cancel()
	}
	s.kill()
}

// kill ends the server's box at once.
func (s *Server) kill() {
	s.stopping.Store(true)
	s.proc.Close()
	s.conn.Close()
}

// handle answers what the server sends: its diagnostics and progress,
// and the requests a client must answer. bridle applies no edit a server
// asks for (rename's edits go through bridle's own edit path).
func (s *Server) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	switch req.Method {
	case protocol.MethodTextDocumentPublishDiagnostics:
		var p protocol.PublishDiagnosticsParams
		if err := json.Unmarshal(params, &p); err == nil {
			if path, ok := pathOf(string(p.URI)); ok {
				s.diags.publish(path, int32(p.Version), p.Diagnostics)
			}
		}
		return nil, nil
	case protocol.MethodProgress:
		var p struct {
			Value struct {
				Kind string `json:"kind"`
			} `json:"value"`
		}
		json.Unmarshal(params, &p)
		switch p.Value.Kind {
		case "begin":
			s.progress.Add(1)
		case "end":
			if s.progress.Add(-1) < 0 {
				s.progress.Store(0)
			}
		}
		return nil, nil
	case protocol.MethodWindowLogMessage, protocol.MethodWindowShowMessage, protocol.MethodTelemetryEvent:
		return nil, nil
	case protocol.MethodWorkDoneProgressCreate, protocol.MethodClientUnregisterCapability, protocol.MethodWindowShowMessageRequest:
		return nil, nil
	case protocol.MethodClientRegisterCapability:
		s.register(params)
		return nil, nil
	case protocol.MethodWorkspaceConfiguration:
		var p protocol.ConfigurationParams
		json.Unmarshal(params, &p)
		return make([]any, len(p.Items)), nil
	case protocol.MethodWorkspaceWorkspaceFolders:
		return []protocol.WorkspaceFolder{{URI: string(uri.File(s.Root)), Name: filepath.Base(s.Root)}}, nil
	case protocol.MethodWorkspaceApplyEdit:
		return map[string]any{"applied": false, "failureReason": "bridle applies no edit a language server asks for"}, nil
	}
	if req.Notif {
		return nil, nil
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "bridle does not answer " + req.Method}
}

// pathOf is the absolute path a file: URI names; false for any other
// URI (the protocol package's Filename panics on those, and a server
// chooses what it sends).
func pathOf(u string) (string, bool) {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme != "file" || !strings.HasPrefix(parsed.Path, "/") {
		return "", false
	}
	return filepath.Clean(filepath.FromSlash(parsed.Path)), true
}

// register keeps the patterns of the files the server asked to hear of.
func (s *Server) register(params json.RawMessage) {
	var p struct {
		Registrations []struct {
			ID              string `json:"id"`
			Method          string `json:"method"`
			RegisterOptions struct {
				Watchers []struct {
					GlobPattern json.RawMessage `json:"globPattern"`
				} `json:"watchers"`
			} `json:"registerOptions"`
		} `json:"registrations"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	for _, r := range p.Registrations {
		if r.Method != protocol.MethodWorkspaceDidChangeWatchedFiles {
			continue
		}
		var globs []string
		for _, w := range r.RegisterOptions.Watchers {
			var g string
			if json.Unmarshal(w.GlobPattern, &g) == nil {
				globs = append(globs, g)
				continue
			}
			var rel struct {
				BaseURI json.RawMessage `json:"baseUri"`
				Pattern string          `json:"pattern"`
			}
			if json.Unmarshal(w.GlobPattern, &rel) == nil && rel.Pattern != "" {
				globs = append(globs, "**/"+rel.Pattern)
			}
		}
		if len(s.watch) < 100 {
			s.watch[r.ID] = globs
		}
	}
}

// logger sends jsonrpc2's complaints to bridle's log.
type logger struct{ log *slog.Logger }

func (l logger) Printf(format string, args ...any) {
	l.log.Debug("language server connection: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// last returns up to n of the last non-empty lines, each cut at width,
// joined by " | ".
func (t *tail) last(n, width int) string {
	t.mu.Lock()
	text := string(t.b)
	t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > width {
				l = l[:width] + "…"
			}
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
