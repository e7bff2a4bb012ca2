package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// RetryAfter reads how long a response asks the client to wait:
// retry-after-ms (milliseconds, sent by OpenAI and Anthropic), then
// retry-after in seconds or as an HTTP date. It returns zero when the
// response says nothing usable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// TransportError classifies a failure that happened below HTTP: the
// connection could not be made, or it dropped. partial says output had
// already been streamed. It returns ctx's error unchanged when the failure
// is a cancellation, since a cancelled call is not a provider failure.
func TransportError(ctx context.Context, name, baseURL string, err error, partial bool) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	e := &Error{Provider: name, Kind: ErrNetwork, Retryable: !partial, Partial: partial, Err: err}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Message = fmt.Sprintf("nothing is listening at %s (connection refused)", baseURL)
	case errors.As(err, &dnsErr):
		e.Message = fmt.Sprintf("cannot resolve the host of %s (%v)", baseURL, dnsErr)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		if partial {
			e.Message = "the connection dropped in the middle of the response; the text received so far is kept"
		} else {
			e.Message = "the connection dropped before the response began"
		}
	case errors.Is(err, context.DeadlineExceeded):
		e.Message = "the request timed out"
	case errors.As(err, &opErr):
		e.Message = fmt.Sprintf("cannot reach %s (%v)", baseURL, opErr)
	default:
		e.Message = err.Error()
	}
	return e
}

// Truncated is the error for a stream that ended without the provider's
// end marker: the server or a proxy closed the connection early.
func Truncated(name string, partial bool) *Error {
	msg := "the stream ended before the response was complete"
	if partial {
		msg += "; the text received so far is kept"
	}
	return &Error{
		Provider:  name,
		Kind:      ErrNetwork,
		Message:   msg,
		Retryable: !partial,
		Partial:   partial,
		Err:       io.ErrUnexpectedEOF,
	}
}

// Release finishes with the body of a response whose stream has ended by
// the protocol's own marker: it reads what is left (the chunked
// terminator, usually) so the connection goes back to the pool, since Go
// closes a connection whose body is closed before EOF, and then calls
// done. It does so in the background and gives up after a second, so a
// server that keeps the connection open cannot hold the caller.
func Release(body io.ReadCloser, done func()) {
	go func() {
		t := time.AfterFunc(time.Second, func() { body.Close() })
		io.Copy(io.Discard, io.LimitReader(body, 1<<20))
		t.Stop()
		body.Close()
		done()
	}()
}

// BodyEncoder encodes request bodies as JSON without HTML escaping (code
// is full of < and >), into a buffer sized from the previous body: a
// session's history only grows, and growing the buffer as it encodes
// would copy a 100 KB body several times on every call.
type BodyEncoder struct{ last atomic.Int64 }

// Encode returns v's JSON encoding.
func (e *BodyEncoder) Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(e.last.Load()) + 4<<10)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	e.last.Store(int64(len(b)))
	return b, nil
}
