package lsp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of what a server may send in one message.
const (
	// MaxMessage is the largest message read whole; a longer one is cut
	// off: skipped unread but for its start, which names the request it
	// answers, and that request fails.
	MaxMessage = 16 << 20
	// headerLine and headerLines bound a header block.
	headerLine  = 1 << 10
	headerLines = 32
	// idPrefix is what of a message cut off is read to find its id.
	idPrefix = 64 << 10
)

// stream is jsonrpc2's ObjectStream over a server's stdin and stdout, in
// LSP's Content-Length framing, within bounds: a message over MaxMessage
// is skipped piece by piece, never held, and a request waiting for it is
// answered with an error naming the size; a message that is not JSON is
// dropped. A header block that breaks the framing ends the connection
// (the server is then restarted): nothing after it can be trusted to
// start where a message starts.
type stream struct {
	r *bufio.Reader
	w *os.File
	// max is MaxMessage, smaller in tests.
	max int
	// writeTimeout bounds one write: a server that stops reading its
	// stdin fails the write, and the connection, instead of blocking
	// whoever writes.
	writeTimeout time.Duration
	// dropped is told of each message skipped, and why; broken of the
	// write that ended the connection.
	dropped func(why string)
	broken  func(err error)
	closer  func() error

	wmu sync.Mutex
}

func newStream(r io.Reader, w *os.File, closer func() error, dropped func(string), broken func(error)) *stream {
	return &stream{r: bufio.NewReaderSize(r, 64<<10), w: w, max: MaxMessage, writeTimeout: 10 * time.Second,
		dropped: dropped, broken: broken, closer: closer}
}

// WriteObject writes one message.
func (s *stream) WriteObject(obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.w.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	buf := make([]byte, 0, len(data)+32)
	buf = append(buf, "Content-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(data)), 10)
	buf = append(buf, "\r\n\r\n"...)
	buf = append(buf, data...)
	if _, err := s.w.Write(buf); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("it stopped reading its input (a write waited %v)", s.writeTimeout)
		}
		// Part of a message may have gone: nothing after it would be
		// read where a message starts. The connection ends.
		s.broken(err)
		s.closer()
		return err
	}
	return nil
}

// ReadObject reads the next message the bounds let through into v.
func (s *stream) ReadObject(v any) error {
	for {
		n, err := s.header()
		if err != nil {
			return err
		}
		if n > s.max {
			id, err := s.skip(n)
			if err != nil {
				return err
			}
			why := fmt.Sprintf("a message of %d bytes, over the %d-byte limit, was cut off", n, s.max)
			s.dropped(why)
			if id == nil {
				continue
			}
			// The request it answered fails, and says why.
			answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
				"error": map[string]any{"code": -32603, "message": "the server's answer was cut off: " + why}})
			return json.Unmarshal(answer, v)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(s.r, body); err != nil {
			return err
		}
		if err := json.Unmarshal(body, v); err != nil {
			s.dropped(fmt.Sprintf("a message that is not JSON-RPC was dropped: %v", err))
			continue
		}
		return nil
	}
}

// header reads a header block and returns its Content-Length.
func (s *stream) header() (int, error) {
	length := -1
	for i := 0; ; i++ {
		if i == headerLines {
			return 0, fmt.Errorf("a header block of more than %d lines", headerLines)
		}
		line, err := s.r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull) || len(line) > headerLine:
			return 0, fmt.Errorf("a header line of more than %d bytes", headerLine)
		case err != nil:
			return 0, err
		}
		text := strings.TrimRight(string(line), "\r\n")
		if text == "" {
			if length < 0 {
				return 0, errors.New("a header block without Content-Length")
			}
			return length, nil
		}
		name, value, ok := strings.Cut(text, ":")
		if !ok {
			return 0, fmt.Errorf("a header line that is not Name: value: %q", text)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return 0, fmt.Errorf("a Content-Length that is not a length: %q", value)
			}
			length = n
		}
	}
}

// skip reads past a message of n bytes, keeping only its start, and
// returns the id it names when it is an answer (nil when it is not, or
// the id is not in its start).
func (s *stream) skip(n int) (json.RawMessage, error) {
	head := make([]byte, min(n, idPrefix))
	if _, err := io.ReadFull(s.r, head); err != nil {
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, s.r, int64(n-len(head))); err != nil {
		return nil, err
	}
	return answerID(head), nil
}

// answerID finds the top-level "id" of the start of a message, if the
// message has no "method" before it (a request or notification is not
// answered).
func answerID(head []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if key == "id" {
			if dec.Decode(&raw) != nil {
				return nil
			}
			return raw
		}
		if key == "method" {
			return nil
		}
		if dec.Decode(&raw) != nil {
			return nil // the rest was cut off
		}
	}
	return nil
}

// Close closes the pipes.
func (s *stream) Close() error { return s.closer() }
