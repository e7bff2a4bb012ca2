package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/internal/app"
	"github.com/bridle-dev/bridle/internal/display"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/session"
)

// jsonVersion is the version of `bridle run --json`'s lines, on each as
// "v". It changes only when a line changes incompatibly; new types and
// new fields do not change it (docs/headless.md).
const jsonVersion = 1

// line is one line of `bridle run --json`; Type says which fields it has.
type line struct {
	V    int    `json:"v"`
	Type string `json:"type"`
	// session
	SessionID string `json:"sessionId,omitempty"`
	Model     string `json:"model,omitempty"`
	Mode      string `json:"mode,omitempty"`
	// update: an ACP session/update's update, as an editor gets it
	Update *acp.SessionUpdate `json:"update,omitempty"`
	// allowed, refused
	ToolCallID string `json:"toolCallId,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Title      string `json:"title,omitempty"`
	Pattern    string `json:"pattern,omitempty"`
	// retry
	Attempt int   `json:"attempt,omitempty"`
	WaitMS  int64 `json:"waitMs,omitempty"`
	// retry, result
	Error string `json:"error,omitempty"`
	// result
	StopReason *string     `json:"stopReason,omitempty"`
	Usage      *tokenUsage `json:"usage,omitempty"`
	Exit       *int        `json:"exit,omitempty"`
}

// tokenUsage is the turn's tokens as the provider reported them.
type tokenUsage struct {
	InputTokens      int `json:"inputTokens"`
	OutputTokens     int `json:"outputTokens"`
	CacheReadTokens  int `json:"cacheReadTokens"`
	CacheWriteTokens int `json:"cacheWriteTokens"`
}

// headless is the session's client (session.Client) when no editor and
// no person is there: the answer on stdout, as text or JSON lines, the
// rest on stderr. A call the mode would ask about runs when an --allow
// pattern covers it and is refused otherwise, and the model is told.
type headless struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
	enc            *json.Encoder // nil: text
	allow          []string
	// quiet keeps stderr for errors and refusals; progress adds what
	// bridle is waiting for.
	quiet, progress bool
	mode            string
	refused         int
	pending         map[string]bool   // tool calls not ended
	titles          map[string]string // tool call id → title: a call's end carries none
	// text: where the answer stands
	lastNewline, wrote, afterTool bool
}

func newHeadless(stdout, stderr io.Writer, asJSON bool, allow []string) *headless {
	h := &headless{stdout: stdout, stderr: stderr, allow: allow, pending: map[string]bool{}, titles: map[string]string{}}
	if asJSON {
		h.enc = json.NewEncoder(stdout)
		h.enc.SetEscapeHTML(false)
	}
	return h
}

func (h *headless) emit(l line) {
	l.V = jsonVersion
	h.enc.Encode(l)
}

// note writes a line on stderr unless --quiet.
func (h *headless) note(format string, args ...any) {
	if !h.quiet {
		fmt.Fprintf(h.stderr, "bridle: "+format+"\n", args...)
	}
}

func (h *headless) started(id, model, mode string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mode = mode
	if h.enc != nil {
		h.emit(line{Type: "session", SessionID: id, Model: model, Mode: mode})
	}
	h.note("session %s, model %s, mode %s", id, model, mode)
	if h.progress {
		h.note("waiting for the model")
	}
}

// retry is told about a failed model call that will be tried again.
func (h *headless) retry(attempt int, err error, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.enc != nil {
		h.emit(line{Type: "retry", Attempt: attempt, WaitMS: wait.Milliseconds(), Error: err.Error()})
	}
	h.note("the model call failed (%v); retrying in %s", err, wait.Round(100*time.Millisecond))
}

func (h *headless) Update(_ context.Context, _ string, u acp.SessionUpdate) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.enc != nil {
		h.emit(line{Type: "update", Update: &u})
	}
	switch {
	case u.AgentMessageChunk != nil:
		h.text(u.AgentMessageChunk)
	case u.ToolCall != nil:
		c := u.ToolCall
		h.titles[c.ToolCallID] = c.Title
		h.pending[c.ToolCallID] = true
		h.afterTool = true
		if h.enc == nil || h.progress {
			h.note("[%s]", c.Title)
		}
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		if c.Title != nil && *c.Title != "" {
			h.titles[c.ToolCallID] = *c.Title
		}
		if c.Status == nil || (*c.Status != acp.ToolCallStatusCompleted && *c.Status != acp.ToolCallStatusFailed) {
			break
		}
		if *c.Status == acp.ToolCallStatusFailed && (h.enc == nil || h.progress) {
			h.note("[%s failed]", h.titles[c.ToolCallID])
		}
		delete(h.pending, c.ToolCallID)
		if h.progress && len(h.pending) == 0 {
			h.note("waiting for the model")
		}
	}
	return nil
}

// text writes the answer on stdout (text mode). An error the session
// shows in the answer is left out: the command says it on stderr.
func (h *headless) text(c *acp.ContentChunk) {
	t := c.Content.Text
	if h.enc != nil || t == nil || t.Text == "" || isErrorChunk(c) {
		return
	}
	if h.afterTool && h.wrote {
		// A new message after tool calls starts a new paragraph.
		sep := "\n\n"
		if h.lastNewline {
			sep = "\n"
		}
		io.WriteString(h.stdout, sep)
	}
	h.afterTool = false
	io.WriteString(h.stdout, t.Text)
	h.wrote = true
	h.lastNewline = strings.HasSuffix(t.Text, "\n")
}

// isErrorChunk reports whether a chunk is the session's account of a
// failed turn (replay marks it _meta.bridle.error).
func isErrorChunk(c *acp.ContentChunk) bool {
	b, _ := c.Meta["bridle"].(map[string]any)
	e, _ := b["error"].(bool)
	return e
}

// RequestPermission answers for the absent user: allow once when an
// --allow pattern covers the call, reject once otherwise.
func (h *headless) RequestPermission(_ context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	title := ""
	if req.ToolCall.Title != nil {
		title = *req.ToolCall.Title
	}
	tool, scope, pattern := scopeOf(req.Meta)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.allow {
		if scope.Matches(p) {
			if h.enc != nil {
				h.emit(line{Type: "allowed", ToolCallID: req.ToolCall.ToolCallID, Tool: tool, Title: title, Pattern: p})
			}
			if h.progress {
				h.note("allowed by --allow %s: %s", shellQuote(p), title)
			}
			return choose(req, acp.PermissionOptionKindAllowOnce), nil
		}
	}
	h.refused++
	if h.enc != nil {
		h.emit(line{Type: "refused", ToolCallID: req.ToolCall.ToolCallID, Tool: tool, Title: title, Pattern: pattern})
	}
	fmt.Fprintf(h.stderr, "bridle: refused %s: it needs approval and no one is there to give it; %s\n", title, h.advice(scope, pattern))
	resp := choose(req, acp.PermissionOptionKindRejectOnce)
	resp.Meta = map[string]any{"bridle": map[string]any{"unattended": true}}
	return resp, nil
}

// advice says how a later run lets such a call run: the pattern that
// covers it, or a mode that runs it unasked, never the mode in use.
func (h *headless) advice(scope permission.Scope, pattern string) string {
	// The pattern is the model's text: shown as a label, with no
	// escape sequence reaching the terminal.
	allow := "--allow " + display.Label(shellQuote(pattern))
	mode := ""
	switch {
	case scope.Command != "" && h.mode != string(permission.ModeFullAuto):
		mode = "full-auto"
	case scope.Command == "" && h.mode == string(permission.ModeAsk):
		mode = "auto-edit"
	}
	if pattern == "" {
		// session.ScopeMeta.Secret: the call's target held a secret.
		return "it holds a secret, so no --allow pattern but '*' covers it"
	}
	if scope.Host != "" {
		// No mode fetches a host the settings do not allow.
		return fmt.Sprintf("to run it unasked, run with %s, or add %s to sandbox.command.allow_hosts in your settings", allow, display.Label(scope.Host))
	}
	if mode == "" {
		return "to run it unasked, run with " + allow
	}
	return fmt.Sprintf("to run it unasked, run with %s, or --mode %s", allow, mode)
}

// scopeOf reads what the call covers from the request's _meta.bridle
// (session.ScopeMeta): the tool, the scope, and the pattern a standing
// answer would record. Without it the scope matches only "*".
func scopeOf(meta map[string]any) (tool string, scope permission.Scope, pattern string) {
	b, _ := meta["bridle"].(map[string]any)
	tool, _ = b["tool"].(string)
	raw, err := json.Marshal(b["scope"])
	if err != nil {
		return tool, scope, ""
	}
	var s session.ScopeMeta
	json.Unmarshal(raw, &s)
	return tool, permission.Scope{Command: s.Command, Paths: s.Paths, Host: s.Host, Target: s.Target}, s.Pattern
}

// choose answers req with its first option of kind, or cancelled.
func choose(req acp.RequestPermissionRequest, kind acp.PermissionOptionKind) acp.RequestPermissionResponse {
	for _, o := range req.Options {
		if o.Kind == kind {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}}
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &struct{}{}}}
}

func (h *headless) refusals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}

// finish ends the output: the answer with a newline (text), so the
// shell prompt starts on a line of its own, or the result line (JSON).
func (h *headless) finish(res app.RunResult, code int, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.enc == nil {
		if h.wrote && !h.lastNewline {
			io.WriteString(h.stdout, "\n")
		}
		if res.Stop != "" && res.Stop != "end_turn" {
			h.note("the turn ended: %s", res.Stop)
		}
		return
	}
	l := line{Type: "result", SessionID: res.SessionID, StopReason: &res.Stop, Exit: &code,
		Usage: &tokenUsage{res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CacheReadTokens, res.Usage.CacheWriteTokens}}
	if err != nil {
		l.Error = err.Error()
	}
	h.emit(l)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
