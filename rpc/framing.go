package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Framing is how messages are delimited on the wire.
type Framing int

const (
	// NDJSON is one JSON message per line: ACP's framing.
	NDJSON Framing = iota + 1
	// ContentLength is LSP's framing: headers, a blank line, the body.
	ContentLength
)

func (f Framing) String() string {
	switch f {
	case NDJSON:
		return "ndjson"
	case ContentLength:
		return "content-length"
	}
	return "undetected"
}

// MaxMessage bounds one incoming message. A larger one is skipped without
// being held in memory, and answered with an error.
const MaxMessage = 64 << 20

// Stream is a jsonrpc2.ObjectStream that detects the framing from the first
// byte it reads and answers in the same framing.
//
// It also answers the messages jsonrpc2 cannot: bytes that are not JSON
// (-32700), batches and non-objects (-32600) and oversized frames. The
// library would close the connection on those; a client that sent one bad
// message keeps a usable connection instead.
type Stream struct {
	r      *bufio.Reader
	w      io.Writer
	closer io.Closer
	limit  int

	mu      sync.Mutex // guards framing and writes
	framing Framing
	// detected is closed once the framing is known, so writes made before
	// the first read (there should be none) wait rather than guess.
	detected chan struct{}
	once     sync.Once
}

// NewStream returns a stream reading r and writing w; closer is closed by
// Close (it may be nil).
func NewStream(r io.Reader, w io.Writer, closer io.Closer) *Stream {
	return &Stream{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: closer, limit: MaxMessage, detected: make(chan struct{})}
}

// Framing returns the detected framing, or 0 before the first message.
func (s *Stream) Framing() Framing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.framing
}

// Close closes the underlying stream.
func (s *Stream) Close() error {
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

// WriteObject writes one message in the detected framing.
func (s *Stream) WriteObject(obj any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	<-s.detected
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(body)
}

func (s *Stream) write(body []byte) error {
	var buf []byte
	if s.framing == ContentLength {
		buf = fmt.Appendf(nil, "Content-Length: %d\r\n\r\n", len(body))
		buf = append(buf, body...)
	} else {
		buf = append(body, '\n')
	}
	_, err := s.w.Write(buf)
	return err
}

// ReadObject reads the next valid JSON-RPC message into v, answering and
// skipping invalid ones.
func (s *Stream) ReadObject(v any) error {
	for {
		frame, err := s.readFrame()
		var tooBig *tooLargeError
		switch {
		case errors.As(err, &tooBig):
			s.reject(nil, -32600, fmt.Sprintf("message of %s is larger than the %d MiB limit and was skipped: send smaller messages (large content belongs in files the agent can read)", tooBig.size, s.limit>>20))
			continue
		case errors.Is(err, errBadHeader):
			s.reject(nil, -32700, err.Error())
			continue
		case err != nil:
			return err
		}
		frame = bytes.TrimSpace(frame)
		if len(frame) == 0 {
			continue
		}
		if !json.Valid(frame) {
			s.reject(nil, -32700, "parse error: the message is not valid JSON; send one JSON-RPC 2.0 object per message")
			continue
		}
		switch frame[0] {
		case '[':
			s.reject(nil, -32600, "batch requests are not supported: send each JSON-RPC message on its own")
			continue
		case '{':
		default:
			s.reject(nil, -32600, "invalid request: a JSON-RPC message must be a JSON object")
			continue
		}
		if err := checkEnvelope(frame); err != nil {
			s.reject(idOf(frame), -32600, err.Error())
			continue
		}
		if err := json.Unmarshal(frame, v); err != nil {
			s.reject(idOf(frame), -32600, "invalid request: "+err.Error())
			continue
		}
		return nil
	}
}

// checkEnvelope checks the JSON-RPC 2.0 envelope jsonrpc2 is lenient about.
func checkEnvelope(frame []byte) error {
	var env struct {
		JSONRPC *string         `json:"jsonrpc"`
		Method  json.RawMessage `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(frame, &env); err != nil {
		return fmt.Errorf("invalid request: %v", err)
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return errors.New(`invalid request: "jsonrpc" must be "2.0"`)
	}
	if env.Method == nil && env.Result == nil && env.Error == nil {
		return errors.New(`invalid request: a message needs "method" (request or notification) or "result"/"error" (response)`)
	}
	if env.Method != nil {
		var m string
		if json.Unmarshal(env.Method, &m) != nil || m == "" {
			return errors.New(`invalid request: "method" must be a non-empty string`)
		}
	}
	return nil
}

// idOf extracts a message's id for an error answer, or nil.
func idOf(frame []byte) any {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(frame, &m) != nil {
		return nil
	}
	switch m.ID.(type) {
	case string, float64:
		return m.ID
	}
	return nil
}

// reject answers a message the connection will not process.
func (s *Stream) reject(id any, code int, msg string) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.write(body)
}

type tooLargeError struct{ size string }

func (e *tooLargeError) Error() string { return "message too large: " + e.size }

var errBadHeader = errors.New("parse error: invalid Content-Length header")

func (s *Stream) readFrame() ([]byte, error) {
	s.once.Do(s.detect)
	if s.framing == ContentLength {
		return s.readContentLength()
	}
	return s.readLine()
}

// detect reads ahead to the first non-space byte: '{' or '[' mean NDJSON,
// anything else (normally 'C') means Content-Length headers.
func (s *Stream) detect() {
	defer close(s.detected)
	f := NDJSON
	for {
		b, err := s.r.Peek(1)
		if err != nil {
			break
		}
		if b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n' {
			s.r.ReadByte()
			continue
		}
		if b[0] != '{' && b[0] != '[' {
			f = ContentLength
		}
		break
	}
	s.mu.Lock()
	s.framing = f
	s.mu.Unlock()
}

// readLine reads one newline-terminated frame. A long line is gathered in
// pieces and joined once, and a line over the limit is skipped piece by
// piece, so memory never holds more than one message.
func (s *Stream) readLine() ([]byte, error) {
	var pieces [][]byte
	size, skipped := 0, 0
	for {
		chunk, err := s.r.ReadSlice('\n')
		if skipped == 0 && size+len(chunk) <= s.limit {
			pieces = append(pieces, bytes.Clone(chunk))
			size += len(chunk)
		} else {
			skipped += size + len(chunk)
			pieces, size = nil, 0
		}
		switch {
		case err == nil:
			if skipped > 0 {
				return nil, &tooLargeError{size: fmt.Sprintf("over %d MiB", skipped>>20)}
			}
			return bytes.Join(pieces, nil), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && size > 0:
			return bytes.Join(pieces, nil), nil
		default:
			return nil, err
		}
	}
}

// readContentLength reads LSP-style headers and a body.
func (s *Stream) readContentLength() ([]byte, error) {
	length := -1
	for lines := 0; ; lines++ {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && strings.TrimSpace(line) == "" && length < 0 && lines == 0 {
				return nil, io.EOF
			}
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if lines == 0 {
				// A stray blank line between messages.
				lines--
				continue
			}
			break
		}
		if len(line) > 1024 || lines > 32 {
			return nil, errBadHeader
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a header line", errBadHeader, line)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w: %q is not a length", errBadHeader, value)
			}
			length = n
		}
	}
	if length < 0 {
		return nil, fmt.Errorf("%w: the header block has no Content-Length", errBadHeader)
	}
	if length > s.limit {
		if _, err := io.CopyN(io.Discard, s.r, int64(length)); err != nil {
			return nil, err
		}
		return nil, &tooLargeError{size: fmt.Sprintf("%d MiB", length>>20)}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		return nil, err
	}
	return body, nil
}
