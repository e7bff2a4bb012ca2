// Package rpc speaks ACP (the Agent Client Protocol) over JSON-RPC on
// stdio. It knows the protocol and nothing about SQLite: each method maps
// to a call on session.Manager, and the server is the session.Client
// through which sessions reach the editor. Of models it knows only their
// errors' kinds, to give each its JSON-RPC code.
package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	lsp "go.lsp.dev/protocol"

	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/sandbox/mcp"
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
	// Models are offered in each session's model option, beside its
	// current model; any provider/model-id is accepted.
	Models []string
}

// Server is one ACP connection.
type Server struct {
	opts Options
	log  *slog.Logger
	mgr  *session.Manager

	conn *jsonrpc2.Conn

	// lastID is the id of the last request bridle sent the client.
	lastID atomic.Uint64

	mu sync.Mutex
	// inflight holds the running prompts by request id. Ids are the
	// client's, per connection: a second prompt with the id of one still
	// running is refused, so a cancel by id is never ambiguous.
	inflight map[jsonrpc2.ID]context.CancelFunc
	shutdown bool
	exited   chan struct{}
	exitOnce sync.Once
}

// NewServer returns a server; Serve connects it.
func NewServer(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, log: log, inflight: map[jsonrpc2.ID]context.CancelFunc{}, exited: make(chan struct{})}
}

// Serve answers requests on stream until the client disconnects, sends
// LSP's exit, or ctx ends. It returns true if the client asked for an
// orderly shutdown (or simply closed the stream).
func (s *Server) Serve(ctx context.Context, stream *Stream, mgr *session.Manager) (clean bool) {
	s.mgr = mgr
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	stream.log = s.log
	s.mu.Lock()
	s.conn = jsonrpc2.NewConn(ctx, stream, s, jsonrpc2.SetLogger(logger))
	s.mu.Unlock()
	var exited bool
	select {
	case <-s.conn.DisconnectNotify():
	case <-s.exited:
		exited = true
	case <-ctx.Done():
	}
	mgr.Shutdown()
	s.conn.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return !exited || s.shutdown
}

// Handle implements jsonrpc2.Handler. It runs on the connection's read
// loop, so messages are handled in the order they arrive; only a prompt's
// turn runs on, in its own goroutine, once it has started (so a
// session/cancel sent right after the prompt always finds the turn).
func (s *Server) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		s.notification(req)
		return
	}
	switch req.Method {
	case "session/prompt":
		s.prompt(ctx, conn, req)
		return
	case "session/cancel", "$/cancel_request", "$/cancelRequest":
		// Notifications, sent with an id by mistake: cancel all the same,
		// and answer (null), since the client waits for an answer.
		s.reply(ctx, conn, req, nil, s.cancel(req))
		return
	}
	result, err := s.call(ctx, req)
	s.reply(ctx, conn, req, result, err)
	if err == nil {
		s.opened(ctx, req, result)
	}
}

// opened tells a session the editor has it, once the answer that names it
// is sent: notices held back (an MCP server that failed) go out, and
// questions a crashed process left unanswered are asked again.
func (s *Server) opened(ctx context.Context, req *jsonrpc2.Request, result any) {
	var id string
	switch req.Method {
	case "session/new":
		id = result.(NewSessionResponse).SessionID
	case "session/load", "session/resume":
		var p LoadSessionRequest
		if decode(req.Params, &p) != nil {
			return
		}
		id = p.SessionID
	default:
		return
	}
	if sess, err := s.mgr.Get(ctx, id); err == nil {
		sess.Ready(ctx)
	}
}

func (s *Server) reply(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request, result any, err error) {
	var werr error
	if err != nil {
		rerr := toRPCError(err)
		s.log.Debug("request failed", "method", req.Method, "code", rerr.Code, "err", rerr.Message)
		werr = conn.ReplyWithError(ctx, req.ID, rerr)
	} else {
		werr = conn.Reply(ctx, req.ID, result)
	}
	if werr != nil {
		s.log.Debug("reply not delivered", "method", req.Method, "err", werr)
	}
}

func (s *Server) notification(req *jsonrpc2.Request) {
	switch req.Method {
	case "session/cancel", "$/cancel_request", "$/cancelRequest":
		if err := s.cancel(req); err != nil {
			s.log.Warn(req.Method+" ignored", "err", err)
		}
	case "exit":
		s.exitOnce.Do(func() { close(s.exited) })
	default:
		// JSON-RPC: unknown notifications are ignored without an answer.
		s.log.Debug("notification ignored", "method", req.Method)
	}
}

// cancel handles session/cancel (by session), ACP's $/cancel_request and
// LSP's $/cancelRequest (by request id).
func (s *Server) cancel(req *jsonrpc2.Request) error {
	switch req.Method {
	case "session/cancel":
		var p SessionRequest
		if err := decode(req.Params, &p); err != nil {
			return err
		}
		s.mgr.Cancel(p.SessionID)
		return nil
	case "$/cancel_request":
		var p CancelRequestParams
		if req.Params == nil || json.Unmarshal(*req.Params, &p) != nil || p.RequestID == nil {
			return missing("requestId")
		}
		return s.cancelRequest("requestId", p.RequestID)
	default:
		var p lsp.CancelParams
		if req.Params == nil || json.Unmarshal(*req.Params, &p) != nil || p.ID == nil {
			return missing("id")
		}
		raw, _ := json.Marshal(p.ID)
		return s.cancelRequest("id", raw)
	}
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

// prompt starts a turn on the read loop and answers from a goroutine.
func (s *Server) prompt(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	var p PromptRequest
	if err := decode(req.Params, &p); err != nil {
		s.reply(ctx, conn, req, nil, err)
		return
	}
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		s.reply(ctx, conn, req, nil, err)
		return
	}
	content, err := contentOf(p.Prompt)
	if err != nil {
		s.reply(ctx, conn, req, nil, err)
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	_, dup := s.inflight[req.ID]
	if !dup {
		s.inflight[req.ID] = cancel
	}
	s.mu.Unlock()
	if dup {
		cancel()
		s.reply(ctx, conn, req, nil, &jsonrpc2.Error{Code: CodeInvalidRequest, Message: fmt.Sprintf(
			"invalid request: id %s is in use by a session/prompt still running on this connection; give each request its own id", req.ID)})
		return
	}
	run, err := sess.Start(rctx, content)
	if err != nil {
		s.mu.Lock()
		delete(s.inflight, req.ID)
		s.mu.Unlock()
		cancel()
		s.reply(ctx, conn, req, nil, err)
		return
	}
	go func() {
		stop, err := run.Wait()
		// Free the id before answering: once the client has the answer it
		// may use the id again.
		s.mu.Lock()
		delete(s.inflight, req.ID)
		s.mu.Unlock()
		cancel()
		if err != nil {
			s.reply(ctx, conn, req, nil, err)
			return
		}
		s.reply(ctx, conn, req, PromptResponse{StopReason: string(stop)}, nil)
	}()
}

// call handles every request but session/prompt.
func (s *Server) call(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case "initialize":
		var p InitializeRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return s.initialize(p), nil
	case "authenticate":
		var p AuthenticateRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		if s.opts.Unconfigured != "" {
			return nil, &jsonrpc2.Error{Code: CodeAuthRequired, Message: s.opts.Unconfigured}
		}
		return struct{}{}, nil
	case "session/new":
		var p NewSessionRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		info, err := s.mgr.New(ctx, session.NewParams{Cwd: p.Cwd, AdditionalDirs: p.AdditionalDirectories, MCPServers: mcpServers(p.MCPServers)})
		if err != nil {
			return nil, err
		}
		s.announce(ctx, info.ID)
		return NewSessionResponse{SessionID: info.ID, Modes: modeState(info.Mode), ConfigOptions: s.configOptions(info)}, nil
	case "session/load", "session/resume":
		var p LoadSessionRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		load := s.mgr.Resume
		if req.Method == "session/load" {
			load = s.mgr.Load
		}
		sess, err := load(ctx, session.OpenParams{ID: p.SessionID, Cwd: p.Cwd, MCPServers: mcpServers(p.MCPServers)})
		if err != nil {
			return nil, err
		}
		s.announce(ctx, sess.ID())
		info := sess.Info()
		return LoadSessionResponse{Modes: modeState(info.Mode), ConfigOptions: s.configOptions(info)}, nil
	case "session/list":
		var p ListSessionsRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
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
		resp := ListSessionsResponse{Sessions: make([]SessionInfo, 0, len(infos))}
		for _, in := range infos {
			resp.Sessions = append(resp.Sessions, sessionInfo(in))
		}
		if next != "" {
			resp.NextCursor = &next
		}
		return resp, nil
	case "session/close", "session/delete":
		var p SessionRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		op := s.mgr.Close
		if req.Method == "session/delete" {
			op = s.mgr.Delete
		}
		if err := op(ctx, p.SessionID); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	case "session/set_mode":
		var p SetSessionModeRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		sess, err := s.mgr.Get(ctx, p.SessionID)
		if err != nil {
			return nil, err
		}
		return struct{}{}, sess.SetMode(ctx, p.ModeID)
	case "session/set_config_option":
		var p SetSessionConfigOptionRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return s.setConfigOption(ctx, p)
	case "_bridle/events":
		var p EventsRequest
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return s.events(ctx, p)
	case "shutdown":
		// LSP's orderly stop: end every turn now; exit follows.
		s.mgr.Shutdown()
		s.mu.Lock()
		s.shutdown = true
		s.mu.Unlock()
		return nil, nil
	}
	return nil, &jsonrpc2.Error{Code: CodeMethodNotFound,
		Message: fmt.Sprintf("method %q is not supported by bridle: see the ACP methods listed in initialize's agentCapabilities", req.Method)}
}

func (s *Server) initialize(p InitializeRequest) InitializeResponse {
	meta := map[string]any{"version": s.opts.Version, "events": "_bridle/events"}
	for k, v := range s.opts.Meta {
		meta[k] = v
	}
	resp := InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: PromptCapabilities{EmbeddedContext: true},
			MCPCapabilities:    MCPCapabilities{HTTP: true},
			SessionCapabilities: SessionCapabilities{
				List: &empty{}, Resume: &empty{}, Close: &empty{}, Delete: &empty{},
				AdditionalDirectories: &empty{},
			},
			Meta: Meta{"bridle": meta},
		},
		AuthMethods: []AuthMethod{},
		AgentInfo:   &Implementation{Name: "bridle", Title: "bridle", Version: s.opts.Version},
	}
	if s.opts.Unconfigured != "" {
		resp.AuthMethods = append(resp.AuthMethods, AuthMethod{ID: "configure-provider", Name: "Configure a model provider", Description: s.opts.Unconfigured})
	}
	return resp
}

// announce tells the editor which slash commands a session offers.
func (s *Server) announce(ctx context.Context, sessionID string) {
	cmds := s.mgr.Commands()
	if len(cmds) == 0 {
		return
	}
	_ = s.Update(ctx, sessionID, session.Update{Kind: session.UpdateCommands, Commands: cmds})
}

func (s *Server) setConfigOption(ctx context.Context, p SetSessionConfigOptionRequest) (any, error) {
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
	return SetSessionConfigOptionResponse{ConfigOptions: s.configOptions(sess.Info())}, nil
}

func modeState(current string) *SessionModeState {
	st := &SessionModeState{CurrentModeID: current}
	for _, m := range sandbox.Modes() {
		st.AvailableModes = append(st.AvailableModes, SessionMode{ID: string(m.ID), Name: m.Name, Description: m.Description})
	}
	return st
}

func (s *Server) configOptions(info session.Info) []SessionConfigOption {
	mode := SessionConfigOption{ID: "mode", Name: "Mode", Category: "mode", Type: "select", CurrentValue: info.Mode}
	for _, m := range sandbox.Modes() {
		mode.Options = append(mode.Options, SessionConfigSelectOption{Value: string(m.ID), Name: m.Name, Description: m.Description})
	}
	opts := []SessionConfigOption{mode}
	if info.Model == "" {
		return opts // nothing configured: the auth method says what to set
	}
	// The model is pinned at session/new; changing it here is explicit and
	// recorded as a model_changed event.
	model := SessionConfigOption{ID: "model", Name: "Model", Category: "model", Type: "select", CurrentValue: info.Model,
		Description: "provider/model-id; any model the provider serves can be set"}
	seen := map[string]bool{}
	for _, m := range append([]string{info.Model}, s.opts.Models...) {
		if m != "" && !seen[m] {
			seen[m] = true
			model.Options = append(model.Options, SessionConfigSelectOption{Value: m, Name: m})
		}
	}
	return append(opts, model)
}

func sessionInfo(in session.Info) SessionInfo {
	si := SessionInfo{SessionID: in.ID, Cwd: in.Cwd, AdditionalDirectories: in.AdditionalDirs}
	if in.Title != "" {
		t := in.Title
		si.Title = &t
	}
	if in.UpdatedAt != 0 {
		u := time.UnixMilli(in.UpdatedAt).UTC().Format(time.RFC3339)
		si.UpdatedAt = &u
	}
	si.Meta = Meta{"bridle": map[string]any{"model": in.Model, "mode": in.Mode}}
	return si
}

// mcpServers converts ACP's mcpServers entries; Manager checks them.
func mcpServers(in []MCPServer) []mcp.Server {
	out := make([]mcp.Server, 0, len(in))
	for _, m := range in {
		sv := mcp.Server{Name: m.Name, Type: m.Type, Command: m.Command, Args: m.Args, URL: m.URL}
		for _, e := range m.Env {
			sv.Env = append(sv.Env, mcp.Var{Name: e.Name, Value: e.Value})
		}
		for _, h := range m.Headers {
			sv.Headers = append(sv.Headers, mcp.Var{Name: h.Name, Value: h.Value})
		}
		out = append(out, sv)
	}
	return out
}
