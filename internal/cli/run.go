package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/app"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/session"
)

// runOnce is `bridle run "prompt"`: one turn in a new session, headless,
// the answer streamed to stdout and tool activity to stderr. The session
// is logged like any other (`bridle log` shows it).
func runOnce(ctx context.Context, g globals, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("run", flag.ContinueOnError)
	fl.SetOutput(stderr)
	cwd := fl.String("cwd", "", "workspace `directory` (default: the current directory)")
	mode := fl.String("mode", "", "tool mode: read-only, ask (default; nothing is approved, as no one can answer), auto-edit, full-auto")
	words, err := parseAll(fl, args)
	if err != nil {
		return err
	}
	prompt := strings.TrimSpace(strings.Join(words, " "))
	if prompt == "" {
		return errors.New(`run needs a prompt: bridle run "what does main.go do?" [--cwd DIR] [--model provider/model-id]`)
	}
	dir := *cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("--cwd: %w", err)
	}
	a := g.app()
	if msg := a.Models.Unconfigured(dir); msg != "" {
		return errors.New(msg)
	}
	ctx, mgr, out, done, err := headless(ctx, a, stdout, stderr)
	if err != nil {
		return err
	}
	defer done()
	info, err := mgr.New(ctx, session.NewParams{Cwd: dir})
	if err != nil {
		return err
	}
	s, err := mgr.Get(ctx, info.ID)
	if err != nil {
		return err
	}
	if *mode != "" {
		if err := s.SetMode(ctx, *mode); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "bridle: session %s, model %s\n", info.ID, info.Model)
	stopReason, err := s.Prompt(ctx, []event.Content{{Type: "text", Text: prompt}})
	out.finish()
	if err != nil {
		if pe, ok := provider.AsError(err); ok {
			return errors.New(pe.Error())
		}
		return err
	}
	if stopReason != session.StopEndTurn {
		fmt.Fprintf(stderr, "bridle: the turn ended: %s\n", stopReason)
	}
	if stopReason == session.StopCancelled {
		return errors.New("cancelled")
	}
	return nil
}

// headless opens the store and a session manager that reports to the
// terminal (printer), for a command with no editor; Ctrl-C or SIGTERM
// cancels ctx. done shuts the manager down and closes the store.
func headless(ctx context.Context, a *app.App, stdout, stderr io.Writer) (context.Context, *session.Manager, *printer, func(), error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	if err := a.Open(ctx); err != nil {
		stop()
		return nil, nil, nil, nil, err
	}
	out := &printer{stdout: stdout, stderr: stderr}
	mgr := a.Manager(out, nil)
	return ctx, mgr, out, func() {
		mgr.Shutdown()
		a.Close()
		stop()
	}, nil
}

// printer is the session's client for a terminal: the answer on stdout,
// everything else on stderr. No one is there to approve a tool call, so
// every request is refused, and the model is told so.
type printer struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
	lastNewline    bool
	wrote          bool
	afterTool      bool              // a tool ran since the last text
	titles         map[string]string // tool call id → title: a call's end carries none
}

func (p *printer) Update(_ context.Context, _ string, u acp.SessionUpdate) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case u.AgentMessageChunk != nil:
		text := session.TextOf(u.AgentMessageChunk)
		if text == "" {
			return nil
		}
		if p.afterTool && p.wrote {
			// A new message after tool calls starts a new paragraph.
			sep := "\n\n"
			if p.lastNewline {
				sep = "\n"
			}
			io.WriteString(p.stdout, sep)
		}
		p.afterTool = false
		io.WriteString(p.stdout, text)
		p.wrote = true
		p.lastNewline = strings.HasSuffix(text, "\n")
	case u.ToolCall != nil:
		fmt.Fprintf(p.stderr, "\n[%s]\n", u.ToolCall.Title)
		if p.titles == nil {
			p.titles = map[string]string{}
		}
		p.titles[u.ToolCall.ToolCallID] = u.ToolCall.Title
		p.afterTool = true
	case u.ToolCallUpdate != nil:
		if c := u.ToolCallUpdate; c.Status != nil && *c.Status == acp.ToolCallStatusFailed {
			title := p.titles[c.ToolCallID]
			if c.Title != nil && *c.Title != "" {
				title = *c.Title
			}
			fmt.Fprintf(p.stderr, "[%s failed]\n", title)
		}
	}
	return nil
}

func (p *printer) RequestPermission(_ context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	title := ""
	if req.ToolCall.Title != nil {
		title = *req.ToolCall.Title
	}
	p.mu.Lock()
	fmt.Fprintf(p.stderr, "\n[refused: %s needs approval, which `bridle run` cannot ask for; use --mode auto-edit or full-auto]\n", title)
	p.mu.Unlock()
	for _, o := range req.Options {
		if o.Kind == acp.PermissionOptionKindRejectOnce {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &struct{}{}}}, nil
}

// finish ends the answer with a newline, so the shell prompt starts on a
// line of its own.
func (p *printer) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wrote && !p.lastNewline {
		io.WriteString(p.stdout, "\n")
	}
}
