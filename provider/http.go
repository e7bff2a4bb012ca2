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

// Endpoint is what an HTTP provider's client holds the same way: its
// name, its base URL (without a trailing slash), the HTTP client and the
// headers every request carries.
type Endpoint struct {
	Name    string
	BaseURL string
	HTTP    *http.Client
	Header  http.Header
}

// NewEndpoint fills an Endpoint's defaults: the name and base URL when
// empty, a client without a timeout (cancellation comes from the
// context), and the headers: JSON accepted, a first attempt counted
// (retries belong to WithRetry, which knows whether output already
// reached the editor; servers that count retries read it, as they did
// from the SDKs), the token as a bearer token when there is one, the
// provider's own headers, then the user's, which win.
func NewEndpoint(name, baseURL string, client *http.Client, token string, own, user map[string]string) Endpoint {
	if client == nil {
		client = &http.Client{}
	}
	h := http.Header{}
	h.Set("Accept", "application/json")
	h.Set("X-Stainless-Retry-Count", "0")
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	for _, m := range []map[string]string{own, user} {
		for k, v := range m {
			h.Set(k, v)
		}
	}
	return Endpoint{Name: name, BaseURL: strings.TrimSuffix(baseURL, "/"), HTTP: client, Header: h}
}

// Open starts an HTTP provider's stream: it encodes req with encode and
// posts it to path below the base URL. A body that cannot be encoded is a
// bad request, and a failed post is classified as nothing streamed yet;
// either is the error the stream yields. The request runs under a context
// of its own, which cancel ends: the caller calls it when the stream ends,
// however it ends (the consumer stopping early too), so the connection
// closes at once in every case.
func (e Endpoint) Open(ctx context.Context, path string, req Request, encode func(Request) ([]byte, error),
	classify func(ctx context.Context, err error, partial bool) error) (*http.Response, context.CancelFunc, error) {
	b, err := encode(req)
	if err != nil {
		return nil, nil, &Error{Provider: e.Name, Kind: ErrBadRequest, Message: err.Error(), Err: err}
	}
	ctx, cancel := context.WithCancel(ctx)
	resp, err := Post(ctx, e.HTTP, e.BaseURL+path, e.Header, b)
	if err != nil {
		err = classify(ctx, err, false)
		cancel()
		return nil, nil, err
	}
	return resp, cancel, nil
}

// APIError starts the Error of an API's answer: its status, the wait it
// asks for, and its message cut to 300 bytes, which the provider words
// into the Error's Message once it has set its Kind (Settle ends it).
func APIError(name string, status int, header http.Header, msg string, partial bool, err error) (*Error, string) {
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return &Error{Provider: name, Status: status, Partial: partial, Err: err, RetryAfter: RetryAfter(header, time.Now())}, msg
}

// Settle ends an Error APIError started: an answer cut after output
// reached the editor is never retried.
func (e *Error) Settle() *Error {
	if e.Partial {
		e.Retryable = false
	}
	return e
}
