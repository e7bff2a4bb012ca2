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
	"syscall"

	"github.com/bridle-dev/bridle/internal/app"
	"github.com/bridle-dev/bridle/permission"
)

// The exit codes of `bridle run`, for scripts (the help lists them).
const (
	exitOK        = 0
	exitFailed    = 1 // the provider failed (or bridle itself did)
	exitBadInput  = 2 // flags, prompt, session, mode or settings
	exitRefused   = 3 // a tool call needed an approval no one could give
	exitMaxTurns  = 4 // --max-turns (or the built-in limit) was reached
	exitCancelled = 130
)

const runHelp = `Usage: bridle run [flags] PROMPT
       bridle run [flags] -          (the prompt from stdin)

One turn, headless: a new session in --cwd (or --session's), the answer on
stdout, tool activity and errors on stderr. The session is logged like any
other: bridle log SESSION shows it, bridle run --session SESSION continues it.

Approvals: no one is there to answer, so what the mode would ask about is
refused (the model is told, stderr says so) unless an --allow pattern
covers it. A pattern is what a standing answer ("for this session") would
record: a command's exact command line (--allow 'go test ./...'), a
directory's files for file tools (--allow 'src/**', '**' for the
workspace) or one file (--allow docs/a.md), a background command's input
(--allow input:bg1), a host web_fetch may reach (--allow
host:pkg.go.dev:443), or '*' for every call.

With --json, stdout is one JSON object per line, "v": 1 on each: first
{"type":"session"}, then {"type":"update"} with each ACP session/update an
editor would get, {"type":"allowed"|"refused"|"retry"}, and last
{"type":"result"} with the stop reason, the usage and the exit code. See
docs/headless.md.

Exit codes:
  0    the turn ended (end_turn; or the model stopped on its own, max_tokens
       or refusal: --json's stopReason says which)
  1    the model provider failed (unreachable, bad key, refused the request)
  2    bad input: flags, prompt, session, mode, model or settings
  3    a tool call was refused: it needed approval (see --allow, --mode)
  4    the turn reached --max-turns model calls
  130  cancelled (SIGINT or SIGTERM)

Flags:
`

// patterns is a repeatable flag.
type patterns []string

func (p *patterns) String() string     { return strings.Join(*p, ", ") }
func (p *patterns) Set(s string) error { *p = append(*p, s); return nil }

// runOnce is `bridle run "prompt"`: one turn in a new session (or
// --session's), headless (app.Run), the answer streamed to stdout as text
// or JSON lines; Ctrl-C or SIGTERM cancels it. It returns the exit code.
func runOnce(ctx context.Context, g globals, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("run", flag.ContinueOnError)
	cwd := fl.String("cwd", "", "workspace `directory` of a new session (default: the current directory)")
	mode := fl.String("mode", "", "tool `mode`: read-only, ask (a new session's default: what needs approval is refused), auto-edit, full-auto")
	sessionID := fl.String("session", "", "continue session `ID` (bridle sessions lists them)")
	asJSON := fl.Bool("json", false, "stdout is JSON lines (see above)")
	maxTurns := fl.Int("max-turns", 0, "stop after `N` model calls (default 50)")
	var allow patterns
	fl.Var(&allow, "allow", "run calls this `pattern` covers without asking (repeatable)")
	quiet := fl.Bool("quiet", false, "nothing on stderr but errors and refusals")
	progress := fl.Bool("progress", false, "progress on stderr even when it is not a terminal")
	words, code, done := parseCommand(fl, runHelp, args, stdout, stderr)
	if done {
		return code
	}
	h := newHeadless(stdout, stderr, *asJSON, allow)
	h.quiet = *quiet
	h.progress = !*quiet && (*progress || isTerminal(stderr))
	// refuse ends a run that cannot start: with --json, the result line
	// still ends stdout.
	refuse := func(err error) int {
		h.finish(app.RunResult{}, exitBadInput, err)
		return fail(stderr, exitBadInput, err)
	}
	prompt := strings.TrimSpace(strings.Join(words, " "))
	if len(words) == 1 && words[0] == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return refuse(fmt.Errorf("cannot read the prompt from stdin: %w", err))
		}
		prompt = strings.TrimSpace(string(b))
		if prompt == "" {
			return refuse(errors.New("the prompt on stdin is empty"))
		}
	}
	if prompt == "" {
		return refuse(errors.New(`run needs a prompt: bridle run "what does main.go do?" (or - to read it from stdin); bridle run --help says more`))
	}
	if *mode != "" {
		if _, err := permission.ParseMode(*mode); err != nil {
			return refuse(fmt.Errorf("--mode: %w", err))
		}
	}
	if *maxTurns < 0 {
		return refuse(fmt.Errorf("--max-turns must be a positive number of model calls, not %d", *maxTurns))
	}
	if *sessionID != "" && *cwd != "" {
		return refuse(errors.New("--cwd is for a new session; --session continues one in its own directory: give one or the other"))
	}
	dir := *cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return refuse(fmt.Errorf("--cwd: %w", err))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := g.app().Run(ctx, h, app.RunParams{
		Cwd: dir, Mode: *mode, Prompt: prompt, Session: *sessionID, MaxTurns: *maxTurns,
		Started: h.started,
		OnRetry: h.retry,
	})
	code = exitOK
	switch {
	case errors.Is(err, app.ErrCancelled):
		code = exitCancelled
	case errors.Is(err, app.ErrBadInput):
		code = exitBadInput
	case err != nil:
		code = exitFailed
	case res.Stop == "max_turn_requests":
		code = exitMaxTurns
	case h.refusals() > 0:
		code = exitRefused
	}
	h.finish(res, code, err)
	if err != nil && !errors.Is(err, app.ErrCancelled) {
		fail(stderr, code, err)
	}
	return code
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
