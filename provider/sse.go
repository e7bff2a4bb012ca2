package provider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Post sends body as JSON to url with header and returns the response
// when its status is 2xx. Any other status is returned as a *StatusError
// holding the start of the body, which is then closed. Errors below HTTP
// are returned as the client gave them, for TransportError.
//
// bridle encodes its own request bodies and reads streams with SSE, so
// this is all it needs of HTTP; the provider SDKs it used before cost
// most of the binary for the same two requests.
func Post(ctx context.Context, client *http.Client, url string, header http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the request to %s: %w", url, err)
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil && len(b) == 0 {
		return nil, err
	}
	return nil, &StatusError{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// StatusError is an HTTP answer whose status is not 2xx.
type StatusError struct {
	Status int
	Header http.Header
	// Body is the start of the answer's body (up to 1 MiB).
	Body []byte
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, bytes.TrimSpace(e.Body))
}

// Event is one server-sent event.
type Event struct {
	// Type is the event's `event:` field, empty when it has none.
	Type string
	// Data is its `data:` lines, joined by newlines.
	Data []byte
}

// SSE reads server-sent events (text/event-stream) from r. Comments and
// fields other than event and data are skipped; an event not ended by a
// blank line when the body ends is dropped, since it may be cut short.
type SSE struct {
	r    *bufio.Reader
	line []byte
	data []byte
	ev   Event
	err  error
}

// NewSSE returns a reader of the events in r.
func NewSSE(r io.Reader) *SSE { return &SSE{r: bufio.NewReaderSize(r, 32<<10)} }

// Next reads the next event; it returns false at the end of the body or
// on an error, which Err then reports.
func (s *SSE) Next() bool {
	if s.err != nil {
		return false
	}
	typ := ""
	s.data = s.data[:0]
	for {
		line, err := s.readLine()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.err = err
			}
			return false
		}
		if len(line) == 0 {
			if typ == "" && len(s.data) == 0 {
				continue
			}
			s.ev = Event{Type: typ, Data: bytes.TrimSuffix(s.data, []byte("\n"))}
			return true
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "event":
			typ = string(value)
		case "data":
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
		}
	}
}

// readLine returns the next line without its end (\n or \r\n), valid
// until the next call.
func (s *SSE) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.line = append(s.line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(bytes.TrimSuffix(s.line, []byte("\n")), []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(s.line) > 0:
			// The body ended inside a line: the event is incomplete.
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// Event returns the event Next read; its Data is valid until the next
// call of Next.
func (s *SSE) Event() Event { return s.ev }

// Err returns the error that ended the stream, nil at a clean end.
func (s *SSE) Err() error { return s.err }
