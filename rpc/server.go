package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	lsp "go.lsp.dev/protocol"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/session"
)

// Options configure a Server.
type Options struct {
	Version string
	Logger  *slog.Logger
	// Unconfigured, when set, says why no model provider is usable; it is
	// advertised as an auth method so the editor can show it.
	Unconfigured string
	// Meta is advertised in agentCapabilities._meta.bridle.
	Meta map[string]any
	// AfterInitialize, when set, runs once initialize has been answered:
	// work the editor should not wait for before its first answer (the
	// sandbox probe) starts there.
	AfterInitialize func()
	// SessionMeta, when set, is added to _meta.bridle of the answers to
	// session/new, session/load and session/resume (the sandbox report,
	// which initialize no longer waits for).
	SessionMeta func() map[string]any
	// Models are offered in each session's model option, beside its
	// current model; any provider/model-id is accepted.
	Models []string
}

// Server is one ACP connection.
type Server struct {
	opts Options
	log  *slog.Logger
	mgr  *session.Manager
	// ready is closed once the manager is open (or failed to, openErr);
	// every message but initialize waits for it. Nil means ready.
	ready    chan struct{}
	openErr  error
	initOnce sync.Once
	// open starts building the manager (Serve's opener) in the
	// background; openOnce runs it once, when initialize has been
	// answered or another message comes first (startOpen). A connection
	// that ends before either never opens it.
	open     func()
	openOnce sync.Once

	conn   *jsonrpc2.Conn
	stream *Stream // holds each message's params for Handle

	// lastID is the id of the last request bridle sent the client.
	lastID atomic.Uint64
	// fsRead and fsWrite are what initialize said the client offers.
	fsRead, fsWrite atomic.Bool

	mu sync.Mutex
	// inflight holds the running prompts by request id. Ids are the
	// client's, per connection: a second prompt with the id of one still
	// running is refused, so a cancel by id is never ambiguous.
	inflight map[jsonrpc2.ID]context.CancelFunc
	shutdown bool
	exited   chan struct{}
	exitOnce sync.Once

	table  map[string]handler
	notify map[string]func(json.RawMessage) error
}

// NewServer returns a server; Serve connects it.
func NewServer(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log, inflight: map[jsonrpc2.ID]context.CancelFunc{}, exited: make(chan struct{})}
	s.table, s.notify = s.handlers(), s.notifications()
	return s
}

// Opener builds the session manager: it opens the database, which the
// first answer (initialize) does not need.
type Opener func(ctx context.Context) (*session.Manager, error)

// Serve answers requests on stream until the client disconnects, sends
// LSP's exit, or ctx ends, while open builds the manager in the
// background: initialize is answered first, open starts once it has
// been (or when another message comes first), and every other message
// waits for the manager, in arrival order (the read loop waits); if it
// cannot be built, they are answered -32603 with the cause. It returns
// true if the client asked for an orderly shutdown (or simply closed the
// stream), and open's error if the manager could not be built.
//
// open waits for initialize's answer because the machine has few cores:
// opening the database while initialize is answered took the CPU from
// the answer (~0.7 ms of 5 on two busy cores), and the editor sends
// nothing that needs the manager before it has that answer.
func (s *Server) Serve(ctx context.Context, stream *Stream, open Opener) (clean bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ready = make(chan struct{})
	s.open = func() {
		go func() {
			defer close(s.ready)
			// On failure the connection stays up: each message is
			// answered with the cause until the editor goes away.
			s.mgr, s.openErr = open(ctx)
		}()
	}
	s.connect(ctx, stream)
	var exited bool
	select {
	case <-s.conn.DisconnectNotify():
	case <-s.exited:
		exited = true
	case <-ctx.Done():
	}
	// Nothing asked for the manager: it is not opened now (a message
	// still on its way is told bridle is closing).
	s.openOnce.Do(func() {
		s.openErr = errClosing
		close(s.ready)
	})
	<-s.ready
	if s.mgr != nil {
		s.mgr.Shutdown()
	}
	s.conn.Close()
	if s.openErr != nil && s.openErr != errClosing {
		return false, s.openErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !exited || s.shutdown, nil
}

// errClosing answers a message that arrives as the connection ends
// before anything had asked for the manager.
var errClosing = errors.New("bridle is closing")

// startOpen starts opening the manager, once.
func (s *Server) startOpen() {
	if s.open != nil {
		s.openOnce.Do(s.open)
	}
}

// waitReady waits until the manager is open; it reports false, having
// answered req, when it could not be opened or ctx ended first.
func (s *Server) waitReady(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) bool {
	if s.ready == nil {
		return true
	}
	s.startOpen()
	select {
	case <-s.ready:
	case <-ctx.Done():
		return false
	}
	if s.openErr == nil {
		return true
	}
	if !req.Notif {
		s.reply(ctx, conn, req, nil, &jsonrpc2.Error{Code: CodeInternal, Message: "bridle could not start: " + s.openErr.Error()})
	}
	return false
}

// connect starts reading stream, handing each message to Handle.
func (s *Server) connect(ctx context.Context, stream *Stream) {
	logger := slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	stream.log = s.log
	stream.hold = true
	s.stream = stream
	s.mu.Lock()
	s.conn = jsonrpc2.NewConn(ctx, stream, s, jsonrpc2.SetLogger(logger))
	s.mu.Unlock()
}

// initializeParams reads protocolVersion as a pointer, to tell a missing
// version from 0, in the same single decode.
type initializeParams struct {
	acp.InitializeRequest
	ProtocolVersion *acp.ProtocolVersion `json:"protocolVersion"`
}

func (s *Server) initialize(_ context.Context, p *initializeParams) (any, error) {
	s.fsRead.Store(p.ClientCapabilities.FS.ReadTextFile)
	s.fsWrite.Store(p.ClientCapabilities.FS.WriteTextFile)
	resp := s.initializeResponse()
	return then{resp, func() {
		s.startOpen()
		if s.opts.AfterInitialize != nil {
			s.initOnce.Do(s.opts.AfterInitialize)
		}
	}}, nil
}

func (s *Server) initializeResponse() acp.InitializeResponse {
	meta := map[string]any{"version": s.opts.Version, "events": MethodEvents, "prompts": MethodPrompts, "rewindPreview": MethodRewindPreview, "fork": MethodFork}
	for k, v := range s.opts.Meta {
		meta[k] = v
	}
	title := "bridle"
	resp := acp.InitializeResponse{
		ProtocolVersion: acp.Version,
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true, Image: true},
			MCPCapabilities:    acp.MCPCapabilities{HTTP: true},
			SessionCapabilities: acp.SessionCapabilities{
				List: &acp.SessionListCapabilities{}, Resume: &acp.SessionResumeCapabilities{},
				Close: &acp.SessionCloseCapabilities{}, Delete: &acp.SessionDeleteCapabilities{},
				AdditionalDirectories: &acp.SessionAdditionalDirectoriesCapabilities{},
				Fork:                  &acp.SessionForkCapabilities{},
			},
			Meta: map[string]any{"bridle": meta},
		},
		AuthMethods: []acp.AuthMethod{},
		AgentInfo:   &acp.Implementation{Name: "bridle", Title: &title, Version: s.opts.Version},
	}
	if s.opts.Unconfigured != "" {
		desc := s.opts.Unconfigured
		resp.AuthMethods = append(resp.AuthMethods, acp.AuthMethod{Agent: &acp.AuthMethodAgent{ID: "configure-provider", Name: "Configure a model provider", Description: &desc}})
	}
	return resp
}

// sessionMeta is the _meta of the answers that open a session.
func (s *Server) sessionMeta() map[string]any {
	if s.opts.SessionMeta == nil {
		return nil
	}
	return map[string]any{"bridle": s.opts.SessionMeta()}
}

func (s *Server) authenticate(context.Context, *acp.AuthenticateRequest) (any, error) {
	if s.opts.Unconfigured != "" {
		return nil, &jsonrpc2.Error{Code: CodeAuthRequired, Message: s.opts.Unconfigured}
	}
	return acp.AuthenticateResponse{}, nil
}

func (s *Server) newSession(ctx context.Context, p *acp.NewSessionRequest) (any, error) {
	info, err := s.mgr.New(ctx, session.NewParams{Cwd: p.Cwd, AdditionalDirs: p.AdditionalDirectories, MCPServers: p.MCPServers})
	if err != nil {
		return nil, err
	}
	s.announce(ctx, info.ID)
	resp := acp.NewSessionResponse{SessionID: info.ID, Modes: s.modeState(info.Mode), ConfigOptions: s.configOptions(info), Meta: s.sessionMeta()}
	return then{resp, func() { s.opened(ctx, info.ID) }}, nil
}

func (s *Server) loadSession(ctx context.Context, p *acp.LoadSessionRequest) (any, error) {
	sess, err := s.mgr.Load(ctx, session.OpenParams{ID: p.SessionID, Cwd: p.Cwd, MCPServers: p.MCPServers})
	if err != nil {
		return nil, err
	}
	s.announce(ctx, sess.ID())
	info := sess.Info()
	resp := acp.LoadSessionResponse{Modes: s.modeState(info.Mode), ConfigOptions: s.configOptions(info), Meta: s.sessionMeta()}
	return then{resp, func() { s.opened(ctx, p.SessionID) }}, nil
}

func (s *Server) resumeSession(ctx context.Context, p *acp.ResumeSessionRequest) (any, error) {
	sess, err := s.mgr.Resume(ctx, session.OpenParams{ID: p.SessionID, Cwd: p.Cwd, MCPServers: p.MCPServers})
	if err != nil {
		return nil, err
	}
	s.announce(ctx, sess.ID())
	info := sess.Info()
	resp := acp.ResumeSessionResponse{Modes: s.modeState(info.Mode), ConfigOptions: s.configOptions(info), Meta: s.sessionMeta()}
	return then{resp, func() { s.opened(ctx, p.SessionID) }}, nil
}

// forkSession answers ACP's session/fork: a new session holding the
// parent's finished turns, opened as session/new opens one (the editor
// prompts it straight away; session/load replays the shared history).
// _bridle/fork, which forks before a chosen prompt, does not open it.
func (s *Server) forkSession(ctx context.Context, p *acp.ForkSessionRequest) (any, error) {
	info, err := s.mgr.ForkAll(ctx, session.ForkParams{ID: p.SessionID, Cwd: p.Cwd, AdditionalDirs: p.AdditionalDirectories, MCPServers: p.MCPServers})
	if err != nil {
		return nil, err
	}
	sess, err := s.mgr.Resume(ctx, session.OpenParams{ID: info.ID, MCPServers: p.MCPServers})
	if err != nil {
		return nil, err
	}
	s.announce(ctx, sess.ID())
	info = sess.Info()
	resp := acp.ForkSessionResponse{SessionID: info.ID, Modes: s.modeState(info.Mode), ConfigOptions: s.configOptions(info), Meta: s.sessionMeta()}
	return then{resp, func() { s.opened(ctx, info.ID) }}, nil
}

// opened tells a session the editor has it, once the answer that names it
// is sent: notices held back (an MCP server that failed) go out, and
// questions a crashed process left unanswered are asked again.
func (s *Server) opened(ctx context.Context, id string) {
	if sess, err := s.mgr.Get(ctx, id); err == nil {
		sess.Ready(ctx)
	}
}

func (s *Server) listSessions(ctx context.Context, p *acp.ListSessionsRequest) (any, error) {
	var cwd, cursor string
	if p.Cwd != nil {
		cwd = *p.Cwd
	}
	if p.Cursor != nil {
		cursor = *p.Cursor
	}
	infos, next, err := s.mgr.List(ctx, cwd, cursor, 100)
	if err != nil {
		return nil, err
	}
	resp := acp.ListSessionsResponse{Sessions: make([]acp.SessionInfo, 0, len(infos))}
	for _, in := range infos {
		resp.Sessions = append(resp.Sessions, sessionInfo(in))
	}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

func (s *Server) closeSession(ctx context.Context, p *acp.CloseSessionRequest) (any, error) {
	if err := s.mgr.Close(ctx, p.SessionID); err != nil {
		return nil, err
	}
	return acp.CloseSessionResponse{}, nil
}

func (s *Server) deleteSession(ctx context.Context, p *acp.DeleteSessionRequest) (any, error) {
	if err := s.mgr.Delete(ctx, p.SessionID); err != nil {
		return nil, err
	}
	return acp.DeleteSessionResponse{}, nil
}

func (s *Server) setMode(ctx context.Context, p *acp.SetSessionModeRequest) (any, error) {
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	return acp.SetSessionModeResponse{}, sess.SetMode(ctx, p.ModeID)
}

// shutdownRequest is LSP's orderly stop: end every turn now; exit follows.
func (s *Server) shutdownRequest(context.Context, *jsonrpc2.Request, json.RawMessage) (any, error) {
	s.mgr.Shutdown()
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	return nil, nil
}

// cancelSession handles session/cancel: the session's turn ends.
func (s *Server) cancelSession(params json.RawMessage) error {
	var p acp.CancelNotification
	if err := decode(&params, &p); err != nil {
		return err
	}
	if p.SessionID == "" {
		return missing("sessionId")
	}
	s.mgr.Cancel(p.SessionID)
	return nil
}

// cancelRequestACP handles ACP's $/cancel_request: the request with that
// id ends.
func (s *Server) cancelRequestACP(params json.RawMessage) error {
	var p acp.CancelRequestNotification
	if decode(&params, &p) != nil || p.RequestID == nil {
		return missing("requestId")
	}
	return s.cancelRequest("requestId", p.RequestID)
}

// cancelRequestLSP handles LSP's $/cancelRequest.
func (s *Server) cancelRequestLSP(params json.RawMessage) error {
	var p lsp.CancelParams
	if decode(&params, &p) != nil || p.ID == nil {
		return missing("id")
	}
	raw, _ := json.Marshal(p.ID)
	return s.cancelRequest("id", raw)
}

func (s *Server) cancelRequest(field string, raw json.RawMessage) error {
	var id jsonrpc2.ID
	if err := id.UnmarshalJSON(raw); err != nil {
		return invalidField(field, fmt.Sprintf("must be the id of a request (a non-negative integer or a string), not %s", raw))
	}
	s.mu.Lock()
	cancel := s.inflight[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// prompt starts a turn on the read loop; its answer comes later, when the
// turn ends. It runs under the cancellation middleware.
func (s *Server) prompt(ctx context.Context, p *acp.PromptRequest) (any, error) {
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	content, err := session.ContentOf(p.Prompt)
	if err != nil {
		return nil, err
	}
	run, err := sess.Start(ctx, content)
	if err != nil {
		return nil, err
	}
	return later(func() (any, error) {
		stop, err := run.Wait()
		if err != nil {
			return nil, err
		}
		return acp.PromptResponse{StopReason: acp.StopReason(stop)}, nil
	}), nil
}

// announce tells the editor which slash commands a session offers.
func (s *Server) announce(ctx context.Context, sessionID string) {
	sess, err := s.mgr.Get(ctx, sessionID)
	if err != nil {
		return
	}
	cmds := sess.Commands()
	if len(cmds) == 0 {
		return
	}
	_ = s.Update(ctx, sessionID, acp.SessionUpdate{AvailableCommandsUpdate: &acp.AvailableCommandsUpdate{AvailableCommands: cmds}})
}

func (s *Server) setConfigOption(ctx context.Context, p *acp.SetSessionConfigOptionRequest) (any, error) {
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	var value string
	if err := json.Unmarshal(p.Value, &value); err != nil {
		return nil, invalidField("value", "must be a string naming one of the option's values")
	}
	switch p.ConfigID {
	case "mode":
		if err := sess.SetMode(ctx, value); err != nil {
			return nil, err
		}
	case "model":
		if err := sess.SetModel(ctx, value); err != nil {
			return nil, err
		}
	default:
		return nil, invalidField("configId", fmt.Sprintf("%q is not a config option of this session; see configOptions in session/new's answer", p.ConfigID))
	}
	return acp.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions(sess.Info())}, nil
}

func (s *Server) modeState(current string) *acp.SessionModeState {
	return &acp.SessionModeState{CurrentModeID: current, AvailableModes: s.mgr.Modes()}
}

// optional is ACP's optional string: absent when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) configOptions(info session.Info) []acp.SessionConfigOption {
	category := func(c acp.SessionConfigOptionCategory) *acp.SessionConfigOptionCategory { return &c }
	var modes []acp.SessionConfigSelectOption
	for _, m := range s.mgr.Modes() {
		modes = append(modes, acp.SessionConfigSelectOption{Value: m.ID, Name: m.Name, Description: m.Description})
	}
	opts := []acp.SessionConfigOption{{ID: "mode", Name: "Mode", Category: category(acp.SessionConfigOptionCategoryMode),
		Type: "select", CurrentValue: raw(info.Mode), Options: raw(modes)}}
	if info.Model == "" {
		return opts // nothing configured: the auth method says what to set
	}
	// The model is pinned at session/new; changing it here is explicit and
	// recorded as a model_changed event.
	var models []acp.SessionConfigSelectOption
	seen := map[string]bool{}
	for _, m := range append([]string{info.Model}, s.opts.Models...) {
		if m != "" && !seen[m] {
			seen[m] = true
			models = append(models, acp.SessionConfigSelectOption{Value: m, Name: m})
		}
	}
	return append(opts, acp.SessionConfigOption{ID: "model", Name: "Model", Category: category(acp.SessionConfigOptionCategoryModel), Type: "select",
		CurrentValue: raw(info.Model), Options: raw(models),
		Description: optional("provider/model-id; any model the provider serves can be set")})
}

func sessionInfo(in session.Info) acp.SessionInfo {
	si := acp.SessionInfo{SessionID: in.ID, Cwd: in.Cwd, AdditionalDirectories: in.AdditionalDirs, Title: optional(in.Title)}
	if in.UpdatedAt != 0 {
		u := time.UnixMilli(in.UpdatedAt).UTC().Format(time.RFC3339)
		si.UpdatedAt = &u
	}
	si.Meta = map[string]any{"bridle": map[string]any{"model": in.Model, "mode": in.Mode}}
	return si
}
