package app

import (
	"context"
	"errors"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/session"
)

// RunParams is one headless turn (`bridle run`): a prompt in a new
// session.
type RunParams struct {
	Cwd    string // the workspace, an absolute path
	Mode   string // the tool mode; "" keeps the default
	Prompt string
	// Started, if set, is told the new session's id and model before the
	// prompt is sent.
	Started func(id, model string)
}

// ErrCancelled is Run's error when the turn was cancelled (Ctrl-C or
// SIGTERM ended ctx).
var ErrCancelled = errors.New("cancelled")

// Run opens the stack, starts a session in p.Cwd that reports to client,
// runs one turn of p.Prompt, and closes what it opened. It refuses
// before opening anything when no model is configured in p.Cwd, so no
// database is made for nothing. ended is the stop reason when the turn
// ended otherwise than by the model's end of turn, else "". The session
// is logged like any other.
func (a *App) Run(ctx context.Context, client session.Client, p RunParams) (ended string, err error) {
	if msg := a.Models.Unconfigured(p.Cwd); msg != "" {
		return "", errors.New(msg)
	}
	mgr, done, err := a.headless(ctx, client)
	if err != nil {
		return "", err
	}
	defer done()
	info, err := mgr.New(ctx, session.NewParams{Cwd: p.Cwd})
	if err != nil {
		return "", err
	}
	s, err := mgr.Get(ctx, info.ID)
	if err != nil {
		return "", err
	}
	if p.Mode != "" {
		if err := s.SetMode(ctx, p.Mode); err != nil {
			return "", err
		}
	}
	if p.Started != nil {
		p.Started(info.ID, info.Model)
	}
	stop, err := s.Prompt(ctx, []event.Content{{Type: "text", Text: p.Prompt}})
	if err != nil {
		if pe, ok := provider.AsError(err); ok {
			// The provider's words alone: what went wrong and what to do.
			return "", errors.New(pe.Error())
		}
		return "", err
	}
	switch stop {
	case session.StopEndTurn:
		return "", nil
	case session.StopCancelled:
		return string(stop), ErrCancelled
	}
	return string(stop), nil
}

// Rewind sends `/rewind arg` to session id, as an editor's user would
// (`bridle rewind`): arg is a prompt number, "undo", or "" to list the
// prompts with the files each changed. What the command says goes to
// client; no one is there to answer, so a file the user changed since
// the agent is left alone (and named).
func (a *App) Rewind(ctx context.Context, client session.Client, id, arg string) error {
	mgr, done, err := a.headless(ctx, client)
	if err != nil {
		return err
	}
	defer done()
	s, err := mgr.Get(ctx, id)
	if err != nil {
		return err
	}
	command := "/rewind"
	if arg != "" {
		command += " " + arg
	}
	_, err = s.Prompt(ctx, []event.Content{{Type: "text", Text: command}})
	return err
}

// headless opens the stack and a session manager that reports to client,
// for a command with no editor. done shuts the manager down and closes
// what Open opened.
func (a *App) headless(ctx context.Context, client session.Client) (*session.Manager, func(), error) {
	if err := a.Open(ctx); err != nil {
		return nil, nil, err
	}
	mgr := a.Manager(client, nil)
	return mgr, func() {
		mgr.Shutdown()
		a.Close()
	}, nil
}
