package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/session"
)

// RunParams is one headless turn (`bridle run`): a prompt in a new
// session, or in session Session when it is set.
type RunParams struct {
	Cwd    string // the workspace of a new session, an absolute path
	Mode   string // the tool mode; "" keeps the session's
	Prompt string
	// Session, if set, is the id of the session the prompt continues.
	Session string
	// MaxTurns, if positive, bounds the model calls of the turn; the
	// turn then ends with stop reason max_turn_requests.
	MaxTurns int
	// Started, if set, is told the session's id, model and mode before
	// the prompt is sent.
	Started func(id, model, mode string)
	// OnRetry, if set, is told about each failed model call that will be
	// tried again, after it is recorded.
	OnRetry func(attempt int, err error, wait time.Duration)
}

// RunResult is how a headless turn ended.
type RunResult struct {
	SessionID string
	// Stop is the turn's stop reason ("" when it failed).
	Stop string
	// Usage adds up what the provider reported for the turn's model
	// calls.
	Usage provider.Usage
}

// ErrCancelled is Run's error when the turn was cancelled (Ctrl-C or
// SIGTERM ended ctx).
var ErrCancelled = errors.New("cancelled")

// ErrBadInput is wrapped by the errors Run returns for what the caller
// gave: an unknown session, a model that cannot be used, a prompt the
// session refuses. Its words are the cause's alone.
var ErrBadInput = errors.New("bad input")

// ErrProvider is wrapped by Run's error when the model provider failed.
var ErrProvider = errors.New("provider failure")

// Run opens the stack, starts a session in p.Cwd (or continues
// p.Session) that reports to client, runs one turn of p.Prompt, and
// closes what it opened. It refuses before opening anything when no
// usable model is configured in p.Cwd, so a run that cannot start
// leaves no database and no session. The session is logged like any
// other.
func (a *App) Run(ctx context.Context, client session.Client, p RunParams) (RunResult, error) {
	if p.Session == "" {
		if err := a.usableModel(ctx, p.Cwd); err != nil {
			return RunResult{}, err
		}
	} else if !storeExists(a.DB) {
		return RunResult{}, classed{ErrBadInput, fmt.Errorf("no session %s: the database %s does not exist", p.Session, a.DB)}
	}
	mgr, done, err := a.headless(ctx, client, func(c *session.Config) {
		c.MaxIterations = p.MaxTurns
		c.Retry.OnRetry = p.OnRetry
	})
	if err != nil {
		return RunResult{}, err
	}
	defer done()
	id := p.Session
	if id == "" {
		info, err := mgr.New(ctx, session.NewParams{Cwd: p.Cwd})
		if err != nil {
			return RunResult{}, plain(err)
		}
		id = info.ID
	}
	s, err := mgr.Get(ctx, id)
	if err != nil {
		return RunResult{}, plain(err)
	}
	res := RunResult{SessionID: id}
	if p.Mode != "" {
		if err := s.SetMode(ctx, p.Mode); err != nil {
			return res, plain(err)
		}
	}
	if p.Started != nil {
		info := s.Info()
		p.Started(id, info.Model, info.Mode)
	}
	before := len(s.Events())
	stop, err := s.Prompt(ctx, []event.Content{{Type: "text", Text: p.Prompt}})
	res.Stop = string(stop)
	for _, e := range s.Events()[min(before, len(s.Events())):] {
		if m, ok := e.Payload.(event.AssistantMessage); ok {
			res.Usage.InputTokens += m.Usage.InputTokens
			res.Usage.OutputTokens += m.Usage.OutputTokens
			res.Usage.CacheReadTokens += m.Usage.CacheReadTokens
			res.Usage.CacheWriteTokens += m.Usage.CacheWriteTokens
		}
	}
	if err != nil {
		if pe, ok := provider.AsError(err); ok {
			// The provider's words alone: what went wrong and what to do.
			return res, classed{ErrProvider, errors.New(pe.Error())}
		}
		return res, plain(err)
	}
	if stop == session.StopCancelled {
		return res, ErrCancelled
	}
	return res, nil
}

// usableModel checks that a new session in cwd would have a model it can
// open: one is configured, its provider is known and has what it needs.
// Opening makes no request.
func (a *App) usableModel(ctx context.Context, cwd string) error {
	if c := a.Models.Config(cwd); c.Err != nil {
		return classed{ErrBadInput, c.Err}
	}
	if msg := a.Models.Unconfigured(cwd); msg != "" {
		return classed{ErrBadInput, errors.New(msg)}
	}
	if _, err := a.Models.Open(ctx, a.Models.DefaultFor(cwd), cwd); err != nil {
		if pe, ok := provider.AsError(err); ok {
			err = errors.New(pe.Error())
		}
		return classed{ErrBadInput, err}
	}
	return nil
}

// classed is an error in its own words, classified by kind (ErrBadInput,
// ErrProvider) for errors.Is.
type classed struct {
	kind error
	error
}

func (e classed) Unwrap() []error { return []error{e.kind, e.error} }

// plain rewords a session error for a command line: a caller's mistake
// (session.ErrInvalid, session.ErrNotFound) is ErrBadInput, in its own
// words without the JSON-RPC prefix.
func plain(err error) error {
	switch {
	case errors.Is(err, session.ErrInvalid):
		msg := strings.TrimPrefix(err.Error(), session.ErrInvalid.Error()+": ")
		return classed{ErrBadInput, errors.New(msg)}
	case errors.Is(err, session.ErrNotFound):
		return classed{ErrBadInput, err}
	}
	return err
}

// Rewind sends `/rewind arg` to session id, as an editor's user would
// (`bridle rewind`): arg is a prompt number, "undo", or "" to list the
// prompts with the files each changed. What the command says goes to
// client; no one is there to answer, so a file the user changed since
// the agent is left alone (and named).
func (a *App) Rewind(ctx context.Context, client session.Client, id, arg string) error {
	if !storeExists(a.DB) {
		return classed{ErrBadInput, fmt.Errorf("no session %s: the database %s does not exist", id, a.DB)}
	}
	mgr, done, err := a.headless(ctx, client, nil)
	if err != nil {
		return err
	}
	defer done()
	s, err := mgr.Get(ctx, id)
	if err != nil {
		return plain(err)
	}
	command := "/rewind"
	if arg != "" {
		command += " " + arg
	}
	if _, err := s.Prompt(ctx, []event.Content{{Type: "text", Text: command}}); err != nil {
		return plain(err)
	}
	return nil
}

// headless opens the stack and a session manager that reports to client,
// for a command with no editor. done shuts the manager down and closes
// what Open opened.
func (a *App) headless(ctx context.Context, client session.Client, adjust func(*session.Config)) (*session.Manager, func(), error) {
	if err := a.Open(ctx); err != nil {
		return nil, nil, err
	}
	cfg := a.config(client, nil)
	if adjust != nil {
		adjust(&cfg)
	}
	mgr := session.NewManager(cfg)
	return mgr, func() {
		mgr.Shutdown()
		a.Close()
	}, nil
}
