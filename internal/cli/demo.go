package cli

import (
	"context"
	"embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/internal/acpclient"
	"github.com/bridle-dev/bridle/internal/app"
)

// demoProject is the project `bridle demo` copies and works in. It lives
// here, beside the command, rather than in the repository's testdata/, so
// that nothing of the tests' data is embedded in the product; its
// directory begins with "_" so the go tool does not build its main.go as
// a package of bridle.
//
//go:embed _demo
var demoProject embed.FS

const demoHelp = `Usage: bridle demo

Run a short scripted session and show it: bridle starts itself as an editor
would (ACP over real pipes), with the offline scripted model (no API key, no
network), in a temporary workspace; sends two prompts; prints the
conversation as the editor shows it, then the session's event log.
`

// demo runs bridle as an editor would: it starts this binary as a child
// speaking ACP over real pipes, with the offline scripted model, in a
// temporary workspace; sends two prompts; prints the conversation as the
// editor shows it; then prints the session's event log.
func demo(ctx context.Context, g globals, args []string, w, stderr io.Writer) error {
	fl := flag.NewFlagSet("demo", flag.ContinueOnError)
	words, code, done := parseCommand(fl, demoHelp, args, w, stderr)
	if done {
		return handled(code)
	}
	if len(words) > 0 {
		return badInput("demo takes no argument, not %q", words[0])
	}
	dir, err := os.MkdirTemp("", "bridle-demo-")
	if err != nil {
		return err
	}
	workspace := filepath.Join(dir, "workspace")
	project, err := fs.Sub(demoProject, "_demo")
	if err != nil {
		return err
	}
	if err := os.CopyFS(workspace, project); err != nil {
		return err
	}
	db := filepath.Join(dir, "bridle.db")
	fmt.Fprintf(w, "bridle demo: a scripted session in a temporary workspace (no API key, no network)\n  workspace: %s\n  database:  %s\n", workspace, db)

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the bridle binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "--db", db, "--model", "scripted/demo")
	view := &editorView{w: w}
	conn, err := acpclient.Start(cmd, acpclient.Options{Stderr: os.Stderr, OnNote: view.note})
	if err != nil {
		return fmt.Errorf("start bridle: %w", err)
	}
	conn.OnRequest = view.permission

	var sid string
	err = func() error {
		var initResp acp.InitializeResponse
		if err := conn.Call(acp.MethodInitialize, map[string]any{"protocolVersion": 1, "clientInfo": map[string]string{"name": "bridle-demo", "version": g.build.Version}}, &initResp, demoTimeout); err != nil {
			return err
		}
		var newResp acp.NewSessionResponse
		if err := conn.Call(acp.MethodSessionNew, map[string]any{"cwd": workspace, "mcpServers": []any{}}, &newResp, demoTimeout); err != nil {
			return err
		}
		sid = newResp.SessionID
		fmt.Fprintf(w, "  session:   %s (agent %s %s, protocol v%d)\n", sid, initResp.AgentInfo.Name, initResp.AgentInfo.Version, initResp.ProtocolVersion)
		for _, text := range []string{"What does this project do?", "Thanks, that's all I needed."} {
			view.prompt(text)
			var resp acp.PromptResponse
			if err := conn.Call(acp.MethodSessionPrompt, map[string]any{"sessionId": sid, "prompt": []any{map[string]string{"type": "text", "text": text}}}, &resp, demoTimeout); err != nil {
				return err
			}
			view.stopped(string(resp.StopReason))
		}
		return nil
	}()
	conn.CloseStdin() // end of input: bridle exits cleanly
	code, werr := conn.WaitExit(demoTimeout)
	if err == nil && werr != nil {
		err = werr
	}
	if err == nil && code != 0 {
		err = fmt.Errorf("bridle exited with status %d", code)
	}
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "\nThe session's event log (bridle log %s):\n\n", sid)
	l, err := app.New(app.Options{DB: db, Log: g.log}).ReadLog(ctx, sid)
	if err != nil {
		return err
	}
	if err := writeLog(w, l, false); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nThe SQLite file is %s. Look again with:\n  %s log --db %s %s\n", db, selfCommand(self), db, sid)
	return nil
}

// demoTimeout bounds each exchange with the child: the scripted model
// answers in milliseconds.
const demoTimeout = time.Minute

// editorView renders session/update notifications as a chat panel would.
type editorView struct {
	w  io.Writer
	mu sync.Mutex
	// last is what the previous line was, to place line breaks.
	last string
}

func (v *editorView) prompt(text string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintf(v.w, "\nyou › %s\n\nbridle › ", text)
	v.last = "agent"
}

func (v *editorView) stopped(reason string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintf(v.w, "\n  (turn ended: %s)\n", reason)
}

// note renders a session/update notification.
func (v *editorView) note(m acpclient.Msg) {
	if m.Method != acp.MethodSessionUpdate {
		return
	}
	var n struct {
		Update map[string]json.RawMessage `json:"update"`
	}
	if json.Unmarshal(m.Params, &n) == nil {
		v.update(n.Update)
	}
}

// permission shows a permission question and answers "allow once".
func (v *editorView) permission(m acpclient.Msg) (any, *acpclient.RPCError) {
	if m.Method != acp.MethodSessionRequestPermission {
		return nil, &acpclient.RPCError{Code: -32601, Message: "the demo client does not handle " + m.Method}
	}
	var p acp.RequestPermissionRequest
	_ = json.Unmarshal(m.Params, &p)
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	v.mu.Lock()
	fmt.Fprintf(v.w, "\n  ? %s — answering \"allow once\"\n", title)
	v.mu.Unlock()
	return map[string]any{"outcome": map[string]string{"outcome": "selected", "optionId": "allow_once"}}, nil
}

func (v *editorView) update(u map[string]json.RawMessage) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var kind string
	json.Unmarshal(u["sessionUpdate"], &kind)
	str := func(key string) string {
		var s string
		json.Unmarshal(u[key], &s)
		return s
	}
	text := func() string {
		var c struct{ Text string }
		json.Unmarshal(u["content"], &c)
		return c.Text
	}
	switch kind {
	case "agent_thought_chunk":
		if v.last != "thought" {
			fmt.Fprint(v.w, "\n  (thinking) ")
		}
		fmt.Fprint(v.w, text())
		v.last = "thought"
	case "agent_message_chunk":
		if v.last != "agent" {
			fmt.Fprint(v.w, "\n")
		}
		fmt.Fprint(v.w, text())
		v.last = "agent"
	case "tool_call":
		fmt.Fprintf(v.w, "\n  ⏺ %s [%s] %s", str("title"), str("kind"), str("status"))
		v.last = "tool"
	case "tool_call_update":
		status := str("status")
		if status != "" {
			fmt.Fprintf(v.w, " → %s", status)
		}
		var content []struct {
			Type    string
			Content struct{ Text string }
		}
		json.Unmarshal(u["content"], &content)
		for _, c := range content {
			if c.Type == "content" {
				fmt.Fprintf(v.w, "\n%s", indent(c.Content.Text, "      │ ", 6))
			}
		}
		v.last = "tool"
	case "usage_update":
	case "available_commands_update":
	}
}

// indent prefixes each line and keeps at most max lines.
func indent(s, prefix string, max int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	more := 0
	if len(lines) > max {
		more = len(lines) - max
		lines = lines[:max]
	}
	for i, l := range lines {
		lines[i] = prefix + l
	}
	out := strings.Join(lines, "\n")
	if more > 0 {
		out += fmt.Sprintf("\n%s(%d more lines)", prefix, more)
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// selfCommand is how the user runs this binary again: `go run .` when
// the go tool built it for the moment (in its go-build directory), else
// bridle.
func selfCommand(self string) string {
	if strings.Contains(filepath.ToSlash(self), "/go-build") {
		return "go run ."
	}
	return "bridle"
}
