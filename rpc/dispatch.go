package rpc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bridle-dev/bridle/acp"
)

// A handler answers one request. params are the request's raw params as
// the stream's envelope pass kept them (jsonrpc2 never sees them); typed
// decodes them, once, into the method's ACP type.
type handler func(ctx context.Context, req *jsonrpc2.Request, params json.RawMessage) (any, error)

// typed makes a handler of a function of the method's params type: the
// params are decoded once, checked for the fields ACP requires, and
// passed on. check may be nil.
func typed[P any](check func(*P) error, h func(ctx context.Context, p *P) (any, error)) handler {
	return func(ctx context.Context, _ *jsonrpc2.Request, params json.RawMessage) (any, error) {
		var p P
		if err := decode(&params, &p); err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(&p); err != nil {
				return nil, err
			}
		}
		return h(ctx, &p)
	}
}

// later is a result still to come: the dispatcher waits for it off the
// read loop and answers then. A prompt's turn answers this way.
type later func() (any, error)

// then is a result followed, once it has been sent, by more work (a
// session the answer names is told the editor now has it).
type then struct {
	result any
	after  func()
}

// cancellable is the cancellation middleware: the request runs under a
// context that $/cancel_request (or LSP's $/cancelRequest) with its id
// cancels, for as long as it runs, including a later result. A second
// request with the id of one still running is refused, so a cancel by id
// is never ambiguous; the id is free again before the answer is sent.
func (s *Server) cancellable(h handler) handler {
	return func(ctx context.Context, req *jsonrpc2.Request, params json.RawMessage) (any, error) {
		rctx, cancel := context.WithCancel(ctx)
		s.mu.Lock()
		_, dup := s.inflight[req.ID]
		if !dup {
			s.inflight[req.ID] = cancel
		}
		s.mu.Unlock()
		if dup {
			cancel()
			return nil, &jsonrpc2.Error{Code: CodeInvalidRequest, Message: fmt.Sprintf(
				"invalid request: id %s is in use by a %s still running on this connection; give each request its own id", req.ID, req.Method)}
		}
		done := func() {
			s.mu.Lock()
			delete(s.inflight, req.ID)
			s.mu.Unlock()
			cancel()
		}
		result, err := h(rctx, req, params)
		if wait, ok := result.(later); ok && err == nil {
			return later(func() (any, error) {
				defer done()
				return wait()
			}), nil
		}
		done()
		return result, err
	}
}

// bridle's own methods, beyond ACP's (named in initialize's _meta).
const (
	MethodEvents        = "_bridle/events"
	MethodPrompts       = "_bridle/prompts"
	MethodFork          = "_bridle/fork"
	MethodRewindPreview = "_bridle/rewind_preview"
	// methodLSPCancel is LSP's spelling of $/cancel_request, which some
	// clients send.
	methodLSPCancel = "$/cancelRequest"
)

// handlers is the table of requests bridle answers.
func (s *Server) handlers() map[string]handler {
	return map[string]handler{
		acp.MethodInitialize:             typed(checkInitialize, s.initialize),
		acp.MethodAuthenticate:           typed(checkAuthenticate, s.authenticate),
		acp.MethodSessionNew:             typed(checkNew, s.newSession),
		acp.MethodSessionLoad:            typed(checkLoad, s.loadSession),
		acp.MethodSessionResume:          typed(checkResume, s.resumeSession),
		acp.MethodSessionFork:            typed(checkFork, s.forkSession),
		acp.MethodSessionList:            typed(nil, s.listSessions),
		acp.MethodSessionClose:           typed(checkClose, s.closeSession),
		acp.MethodSessionDelete:          typed(checkDelete, s.deleteSession),
		acp.MethodSessionSetMode:         typed(checkSetMode, s.setMode),
		acp.MethodSessionSetConfigOption: typed(checkSetConfigOption, s.setConfigOption),
		acp.MethodSessionPrompt:          s.cancellable(typed(checkPrompt, s.prompt)),
		MethodEvents: typed(checkEvents, func(ctx context.Context, p *EventsRequest) (any, error) {
			return s.events(ctx, *p)
		}),
		MethodPrompts: typed(func(p *PromptsRequest) error { return needSession(p.SessionID) }, func(ctx context.Context, p *PromptsRequest) (any, error) {
			return s.prompts(ctx, *p)
		}),
		MethodFork: typed(func(p *ForkRequest) error { return needSession(p.SessionID) }, func(ctx context.Context, p *ForkRequest) (any, error) {
			return s.fork(ctx, *p)
		}),
		MethodRewindPreview: s.cancellable(typed(func(p *RewindPreviewRequest) error { return needSession(p.SessionID) }, func(ctx context.Context, p *RewindPreviewRequest) (any, error) {
			// Hashing the files may ask the editor for its buffers, which
			// it can only answer once this loop reads on: answered later,
			// and cancellable, since an editor that does not answer costs
			// each file its time bound.
			return later(func() (any, error) { return s.rewindPreview(ctx, *p) }), nil
		})),
		"shutdown": s.shutdownRequest,
		// Notifications sent with an id by mistake: cancel all the same,
		// and answer (null), since the client waits for an answer.
		acp.MethodSessionCancel: s.asRequest(s.cancelSession),
		acp.MethodCancelRequest: s.asRequest(s.cancelRequestACP),
		methodLSPCancel:         s.asRequest(s.cancelRequestLSP),
	}
}

// notifications is the table of notifications bridle acts on; the rest
// are ignored, as JSON-RPC says.
func (s *Server) notifications() map[string]func(params json.RawMessage) error {
	return map[string]func(json.RawMessage) error{
		acp.MethodSessionCancel: s.cancelSession,
		acp.MethodCancelRequest: s.cancelRequestACP,
		methodLSPCancel:         s.cancelRequestLSP,
		"exit": func(json.RawMessage) error {
			s.exitOnce.Do(func() { close(s.exited) })
			return nil
		},
	}
}

func (s *Server) asRequest(n func(json.RawMessage) error) handler {
	return func(_ context.Context, _ *jsonrpc2.Request, params json.RawMessage) (any, error) {
		return nil, n(params)
	}
}

// Handle implements jsonrpc2.Handler. It runs on the connection's read
// loop, so messages are handled in the order they arrive; only a later
// result (a prompt's turn) is waited for in its own goroutine, once the
// turn has started (so a session/cancel sent right after the prompt
// always finds the turn).
func (s *Server) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	params, ok := s.stream.params(req)
	if !ok {
		// Not reached: the stream holds every request's params.
		s.log.Error("a message reached the handler without its params", "method", req.Method)
		if !req.Notif {
			s.reply(ctx, conn, req, nil, &jsonrpc2.Error{Code: CodeInternal, Message: "internal error: bridle lost this request's params; send it again"})
		}
		return
	}
	// Only initialize is answered before the manager is open.
	if req.Method != acp.MethodInitialize && !s.waitReady(ctx, conn, req) {
		return
	}
	if req.Notif {
		n := s.notify[req.Method]
		if n == nil {
			s.log.Debug("notification ignored", "method", req.Method)
			return
		}
		if err := n(params); err != nil {
			s.log.Warn(req.Method+" ignored", "err", err)
		}
		return
	}
	h := s.table[req.Method]
	if h == nil {
		s.reply(ctx, conn, req, nil, &jsonrpc2.Error{Code: CodeMethodNotFound,
			Message: fmt.Sprintf("method %q is not supported by bridle: see the ACP methods listed in initialize's agentCapabilities", req.Method)})
		return
	}
	result, err := h(ctx, req, params)
	switch r := result.(type) {
	case later:
		go func() {
			result, err := r()
			s.reply(ctx, conn, req, result, err)
		}()
	case then:
		s.reply(ctx, conn, req, r.result, err)
		if err == nil && r.after != nil {
			r.after()
		}
	default:
		s.reply(ctx, conn, req, result, err)
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

// raw encodes v for a field ACP types as raw JSON (a union bridle writes
// one side of).
func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
