package session

import (
	"context"
	"errors"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/provider"
)

// ModelError is a model provider's failure that ended a turn, as the
// session reports it to the editor: rpc answers the prompt with
// Message, a code from NeedsSetup, and the other fields as the error's
// data. It wraps the turn's error and keeps its text.
type ModelError struct {
	// Provider, Kind and Status are the provider's name, the failure's
	// kind (provider.ErrorKind: "auth", "rate_limited", …) and the HTTP
	// status (0 when there was none).
	Provider string
	Kind     string
	Status   int
	// Message is the provider's own account: what failed, what to do.
	Message string
	// NeedsSetup says no provider is usable as set up: none is
	// configured, or its key was refused. The user's settings must
	// change (ACP's auth_required, -32000).
	NeedsSetup bool
	err        error
}

func (e *ModelError) Error() string {
	if e.err == nil {
		return e.Message
	}
	return e.err.Error()
}

func (e *ModelError) Unwrap() error { return e.err }

// invalidErr is an error the caller's input caused (ErrInvalid), in its
// own words.
type invalidErr struct{ error }

func (e invalidErr) Unwrap() []error { return []error{ErrInvalid, e.error} }

// reported classifies the error a turn ended with for whoever started
// it: a request that does not fit the model's window is the caller's
// prompt to shorten (ErrInvalid, its words kept), and a provider's
// failure a *ModelError. An error the session classifies already, or a
// cancellation, is left as it is.
func reported(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalid), errors.Is(err, ErrBusy),
		errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, contextwin.ErrTooBig):
		return invalidErr{err}
	}
	if pe, ok := provider.AsError(err); ok {
		return &ModelError{Provider: pe.Provider, Kind: string(pe.Kind), Status: pe.Status, Message: pe.Error(),
			NeedsSetup: pe.Kind == provider.ErrNotConfigured || pe.Kind == provider.ErrAuth, err: err}
	}
	return err
}
