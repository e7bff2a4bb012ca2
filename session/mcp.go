package session

import (
	"context"
	"fmt"
	"time"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/session/replay"
	"github.com/bridle-dev/bridle/tools/mcp"
)

// MCP servers belong to the live session: the editor names them when it
// opens the session (session/new, load, resume), bridle starts them in the
// background and stops them with the session (close, delete, shutdown).
// They are never written to the log: their env may hold keys, and the
// editor names them again on every open.

// recoveryMCPWait bounds how long recovery waits for the servers before
// deciding an interrupted MCP call without them.
const recoveryMCPWait = 30 * time.Second

// mcpServers converts ACP's mcpServers entries, as the editor gave them,
// to the servers mcp starts; mcp.Check checks them. It never returns nil.
func mcpServers(in []acp.MCPServer) []mcp.Server {
	out := make([]mcp.Server, 0, len(in))
	vars := func(name, value string, into *[]mcp.Var) { *into = append(*into, mcp.Var{Name: name, Value: value}) }
	for _, m := range in {
		var sv mcp.Server
		switch {
		case m.Stdio != nil:
			sv = mcp.Server{Name: m.Stdio.Name, Command: m.Stdio.Command, Args: m.Stdio.Args}
			for _, e := range m.Stdio.Env {
				vars(e.Name, e.Value, &sv.Env)
			}
		case m.HTTP != nil:
			sv = mcp.Server{Name: m.HTTP.Name, Type: "http", URL: m.HTTP.URL}
			for _, h := range m.HTTP.Headers {
				vars(h.Name, h.Value, &sv.Headers)
			}
		case m.SSE != nil:
			sv = mcp.Server{Name: m.SSE.Name, Type: "sse", URL: m.SSE.URL}
			for _, h := range m.SSE.Headers {
				vars(h.Name, h.Value, &sv.Headers)
			}
		}
		out = append(out, sv)
	}
	return out
}

// startMCP starts the servers, replacing (and stopping) any the session
// had. Secret-named values the editor passes to a server are added to the
// redactor first: a server may well echo its own key.
func (s *Session) startMCP(servers []mcp.Server) {
	var secrets [][2]string
	for _, sv := range servers {
		for _, v := range append(append([]mcp.Var(nil), sv.Env...), sv.Headers...) {
			if redact.SecretName(v.Name) {
				secrets = append(secrets, [2]string{v.Value, "mcp:" + v.Name})
			}
		}
	}
	s.addSecrets(secrets)
	var set *mcp.Set
	if len(servers) > 0 {
		set = mcp.Start(servers, mcp.Options{
			Dir: s.row.Cwd, Version: s.m.cfg.Version, Logger: s.m.log.With("session", s.row.ID),
			Notify: func(server string, err error) {
				s.notice(fmt.Sprintf("MCP server %q %v. The session goes on without its tools.", server, err))
			},
		})
	}
	s.mu.Lock()
	old := s.mcp
	s.mcp = set
	s.mu.Unlock()
	old.Close()
}

// useMCP makes the session use servers, unless it already does.
func (s *Session) useMCP(servers []mcp.Server) {
	if mcp.Same(s.mcpSet().Servers(), servers) {
		return
	}
	s.startMCP(servers)
}

func (s *Session) mcpSet() *mcp.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mcp
}

// notice tells the user something about the session that is not part of
// a turn (an MCP server failed), as an agent message: every ACP editor
// shows those. Notices wait until the editor has the session (Ready).
// A notice can quote a server's error: it is redacted.
func (s *Session) notice(text string) {
	text = s.redactor().Redact(text)
	s.mu.Lock()
	if !s.ready {
		s.notices = append(s.notices, text)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.m.log.Warn(text, "session", s.row.ID)
	s.send(context.Background(), replay.AgentText("\n[bridle: "+text+"]\n"))
}

// Ready is called once the editor has the session: after the answer to
// session/new, session/load or session/resume. It starts watching the
// workspace (whose walk, for the watcher and the .env files, must not
// hold the answer up), delivers the notices held until then and asks
// again the questions a crash left unanswered.
func (s *Session) Ready(ctx context.Context) {
	s.space.Start()
	s.mu.Lock()
	s.ready = true
	held := s.notices
	s.notices = nil
	s.mu.Unlock()
	for _, n := range held {
		s.notice(n)
	}
	s.AskPending(ctx)
}
