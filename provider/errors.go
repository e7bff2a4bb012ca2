package provider

import (
	"errors"
	"fmt"
	"time"
)

// ErrorKind classifies a provider failure by what the user can do about it.
type ErrorKind string

const (
	ErrAuth          ErrorKind = "auth"           // bad or missing key
	ErrModel         ErrorKind = "unknown_model"  // the model id is not served
	ErrContextLength ErrorKind = "context_length" // the request is too long
	ErrRateLimited   ErrorKind = "rate_limited"   // 429
	ErrOverloaded    ErrorKind = "overloaded"     // 529, overloaded_error
	ErrServer        ErrorKind = "server"         // 5xx
	ErrNetwork       ErrorKind = "network"        // connection failed or dropped
	ErrBadRequest    ErrorKind = "bad_request"    // 400 for another reason
	ErrNotConfigured ErrorKind = "not_configured" // no usable provider; the message says what to set
)

// Error is a failed model call, worded for the person at the editor.
type Error struct {
	Provider string
	Kind     ErrorKind
	Status   int // HTTP status, 0 when there was none
	Message  string
	// Retryable says a later identical request may succeed.
	Retryable bool
	// Partial says output had already been streamed when it failed, so the
	// call must not be retried.
	Partial bool
	// RetryAfter is how long the provider asked to wait before trying
	// again (the retry-after header), zero when it did not say.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	s := e.Provider
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	s += ": " + e.Message
	if hint := e.Kind.hint(); hint != "" {
		s += "; " + hint
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

func (k ErrorKind) hint() string {
	switch k {
	case ErrAuth:
		return "check the API key in the environment or settings"
	case ErrModel:
		return "check the model id (BRIDLE_MODEL or --model, written provider/model-id)"
	case ErrContextLength:
		return "the request is longer than the model's window; declare the window in settings if the catalogue is wrong"
	case ErrRateLimited:
		return "rate limited: wait and send the prompt again"
	case ErrOverloaded:
		return "the provider is overloaded: try again shortly"
	case ErrNetwork:
		return "the connection failed: check the base URL and the network"
	}
	return ""
}

// AsError returns err as a *Error if it is one.
func AsError(err error) (*Error, bool) {
	var pe *Error
	ok := errors.As(err, &pe)
	return pe, ok
}
