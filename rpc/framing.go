package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bridle-dev/bridle/acp"
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

// Limits on what one incoming message may take. Past each, the message is
// answered with an error and skipped without being held in memory.
const (
	// MaxMessage bounds one message's body.
	MaxMessage = 64 << 20
	// MaxHeaderLine bounds one Content-Length framing header line, line
	// ending excluded; MaxHeaderLines bounds the lines of one header block.
	MaxHeaderLine  = 1024
	MaxHeaderLines = 32
)

// Stream is a jsonrpc2.ObjectStream that detects the framing from the first
// byte it reads and answers in the same framing.
//
// It also answers the messages jsonrpc2 cannot: bytes that are not JSON
// (-32700), batches and non-objects (-32600), oversized frames and header
// blocks that lie. The library would close the connection on those, or
// lose its place in the stream for good; a client that sent one bad
// message keeps a usable connection instead. And it keeps from jsonrpc2
// what the library would misread: a null id, which it takes for 0.
type Stream struct {
	r      *bufio.Reader
	w      io.Writer
	closer io.Closer
	limit  int
	log    *slog.Logger

	// resync says the last header block or body could not be trusted to
	// end where the next message starts: the next read first skips to the
	// next "Content-Length:".
	resync bool

	// hold: requests and notifications reach jsonrpc2 without their
	// params, which wait in held for the handler (params). Set by the
	// Server; the stream alone hands over whole messages.
	hold bool
	held *envelope

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
	return &Stream{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: closer, limit: MaxMessage,
		log: slog.New(slog.DiscardHandler), detected: make(chan struct{})}
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
	return s.writeBody(body)
}

// writeBody writes one message already encoded, in the detected framing.
func (s *Stream) writeBody(body []byte) error {
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

// frameError is a message the stream answers itself and skips.
type frameError struct {
	code int
	id   any // the message's id when it could be read, else nil
	msg  string
}

func (e *frameError) Error() string { return e.msg }

// ReadObject reads the next valid JSON-RPC message into v, answering and
// skipping invalid ones.
func (s *Stream) ReadObject(v any) error {
	for {
		frame, err := s.readFrame()
		var fe *frameError
		switch {
		case errors.As(err, &fe):
			s.reject(fe.id, fe.code, fe.msg)
			continue
		case err != nil:
			return err
		}
		frame = bytes.TrimSpace(frame)
		if len(frame) == 0 {
			continue
		}
		// An object is checked while its envelope is read; anything else
		// is checked here, and refused either way.
		if frame[0] != '{' {
			switch {
			case !json.Valid(frame):
				s.reject(nil, CodeParseError, notJSON)
			case frame[0] == '[':
				s.reject(nil, CodeInvalidRequest, "batch requests are not supported: send each JSON-RPC message on its own")
			default:
				s.reject(nil, CodeInvalidRequest, "invalid request: a JSON-RPC message must be a JSON object")
			}
			continue
		}
		env, err := checkEnvelope(frame)
		id := answerID(env.ID)
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			s.reject(nil, CodeParseError, notJSON)
			continue
		}
		if err != nil {
			if env.response() {
				// Never answer an answer: the client would take the error
				// for the reply to its own request with that id.
				s.log.Debug("invalid response from the client dropped", "err", err, "message", clip(frame))
				continue
			}
			var fe *frameError
			if errors.As(err, &fe) {
				s.reject(fe.id, fe.code, fe.msg)
			} else {
				s.reject(id, CodeInvalidRequest, err.Error())
			}
			continue
		}
		rest := frame
		if s.hold && !env.response() {
			// The handler takes the params from here (params); jsonrpc2,
			// which would read them twice and re-encode them, is given
			// the envelope alone.
			rest = env.bare()
		}
		if err := json.Unmarshal(rest, v); err != nil {
			if env.response() {
				s.log.Debug("undecodable response from the client dropped", "err", err, "message", clip(frame))
				continue
			}
			s.reject(id, CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		if s.hold && !env.response() {
			s.held = &env
		}
		return nil
	}
}

const notJSON = "parse error: the message is not valid JSON; send one JSON-RPC 2.0 object per message"

// envelope is a message as the stream's one pass over it read it: each
// member's raw JSON (nil when absent, "null" when null). Its id answers
// errors and its params reach the handler's typed decode, so the message
// is not parsed again for either.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`

	method string // Method decoded, once checkEnvelope has passed it
}

// bare is the request or notification without its params, for jsonrpc2:
// it needs the method and id to dispatch and answer, and nothing else.
func (e envelope) bare() []byte {
	b := make([]byte, 0, 40+len(e.Method)+len(e.ID))
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = append(b, e.Method...)
	if e.ID != nil {
		b = append(b, `,"id":`...)
		b = append(b, e.ID...)
	}
	return append(b, '}')
}

// params returns the params of the message the stream last handed over,
// and forgets them. jsonrpc2 hands a message to its handler on the read
// loop before it reads the next, so they are that request's. ok is false
// if the last message was not req (a stream not in hold mode, or a bug).
func (s *Stream) params(req *jsonrpc2.Request) (params json.RawMessage, ok bool) {
	e := s.held
	s.held = nil
	if e == nil || e.method != req.Method || (e.ID == nil) != req.Notif {
		return nil, false
	}
	return e.Params, true
}

// response says the message is an answer (to a request bridle sent).
func (e envelope) response() bool { return e.Method == nil && (e.Result != nil || e.Error != nil) }

// checkEnvelope checks the JSON-RPC 2.0 envelope jsonrpc2 is lenient
// about, and the ids it would misread: a null id reads as 0 and a
// negative one wraps around, so a reply would carry another id.
func checkEnvelope(frame []byte) (envelope, error) {
	var env envelope
	if err := json.Unmarshal(frame, &env); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return env, err
		}
		return env, fmt.Errorf("invalid request: %v", err)
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return env, errors.New(`invalid request: "jsonrpc" must be "2.0"`)
	}
	if env.Method == nil && env.Result == nil && env.Error == nil {
		return env, errors.New(`invalid request: a message needs "method" (request or notification) or "result"/"error" (response)`)
	}
	if env.response() {
		if env.ID == nil || string(env.ID) == "null" {
			return env, errors.New(`a response without an id answers nothing bridle asked`)
		}
		if _, err := strconv.ParseUint(string(env.ID), 10, 63); err != nil && env.ID[0] != '"' {
			return env, errors.New(`a response whose id is not a non-negative integer answers nothing bridle asked`)
		}
		return env, nil
	}
	if json.Unmarshal(env.Method, &env.method) != nil || env.method == "" {
		return env, errors.New(`invalid request: "method" must be a non-empty string`)
	}
	if env.ID == nil {
		return env, nil // a notification
	}
	switch env.ID[0] {
	case '"':
		return env, nil
	case 'n':
		return env, &frameError{code: CodeInvalidRequest,
			msg: `invalid request: "id" must be a number or a string; leave it out for a notification`}
	case '-':
		return env, &frameError{code: CodeInvalidRequest, id: env.ID,
			msg: `invalid request: a negative "id" is not supported; use a non-negative integer or a string`}
	}
	if _, err := strconv.ParseUint(string(env.ID), 10, 63); err != nil {
		if env.ID[0] >= '0' && env.ID[0] <= '9' {
			return env, &frameError{code: CodeInvalidRequest, id: env.ID,
				msg: `invalid request: "id" must be a string or an integer from 0 to 2^63-1`}
		}
		return env, &frameError{code: CodeInvalidRequest,
			msg: `invalid request: "id" must be a number or a string; leave it out for a notification`}
	}
	return env, nil
}

// idOf extracts the id of a message the stream refuses before its
// envelope is read (a body longer than its header said), or nil.
func idOf(frame []byte) any {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(frame, &m) != nil {
		return nil
	}
	return answerID(m.ID)
}

// answerID is a message's raw id as an error answer carries it, or nil
// when it has none that could be answered. It is kept as the client wrote
// it, so a large number keeps every digit.
func answerID(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	switch c := raw[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return raw
	}
	return nil
}

// clip shortens a message for a log line.
func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
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

func (s *Stream) tooLarge(size string) error {
	return &frameError{code: CodeInvalidRequest, msg: fmt.Sprintf("message of %s is larger than the %d MiB limit and was skipped: "+
		"send smaller messages (large content belongs in files the agent can read)", size, s.limit>>20)}
}

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
		if isSpace(b[0]) {
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

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// readLine reads one newline-terminated frame. A long line is gathered in
// pieces and joined once, and a line over the limit is skipped piece by
// piece, so memory never holds more than one message.
func (s *Stream) readLine() ([]byte, error) {
	var pieces [][]byte
	size, skipped := 0, 0
	var prompt *frameError // set once the line is a prompt over MaxPrompt
	for {
		chunk, err := s.r.ReadSlice('\n')
		if skipped == 0 && size+len(chunk) > MaxPrompt && prompt == nil && len(pieces) > 0 {
			// The first piece is the line's first 64 KiB (the buffer's size).
			if method, id := frameHead(pieces[0]); method == acp.MethodSessionPrompt {
				prompt = promptTooLarge(id, 0)
				skipped, pieces, size = size, nil, 0
			}
		}
		if skipped == 0 && size+len(chunk) <= s.limit {
			pieces = append(pieces, bytes.Clone(chunk))
			size += len(chunk)
		} else {
			skipped += size + len(chunk)
			pieces, size = nil, 0
		}
		switch {
		case err == nil:
			if prompt != nil {
				return nil, promptTooLarge(prompt.id, skipped)
			}
			if skipped > 0 {
				return nil, s.tooLarge(fmt.Sprintf("over %d MiB", skipped>>20))
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
//
// A header block that cannot be trusted (a line that is not a header, a
// Content-Length that is not a decimal number, too long a line, too many
// lines, no Content-Length) is answered -32700 and the stream resumes at
// the next "Content-Length:", which may start inside the bad line itself:
// after a body shorter than its header said, the next header is glued to
// the body's end. A body longer than the header said is caught by
// following its JSON structure; see readBody.
func (s *Stream) readContentLength() ([]byte, error) {
	if s.resync {
		if err := s.skipToHeader(); err != nil {
			return nil, err
		}
		s.resync = false
	}
	length, huge := -1, ""
	for lines := 0; ; {
		line, err := s.peekLine()
		switch {
		case errors.Is(err, errLineTooLong):
			return nil, s.badHeader(fmt.Sprintf("a header line is longer than %d bytes", MaxHeaderLine))
		case errors.Is(err, io.EOF) && len(line) == 0 && lines == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		}
		text := bytes.TrimRight(line, "\r\n")
		if len(bytes.Trim(text, " \t")) == 0 && (lines == 0 || len(text) == 0) {
			s.r.Discard(len(line))
			if lines == 0 {
				continue // a stray blank line between messages
			}
			break
		}
		lines++
		if lines > MaxHeaderLines {
			return nil, s.badHeader(fmt.Sprintf("a header block has more than %d lines", MaxHeaderLines))
		}
		if i := indexHeader(text); i > 0 {
			// What is left of a body glued to the next header.
			return nil, s.badHeader(fmt.Sprintf("%s has something before Content-Length", quoteClip(text)))
		}
		name, value, err := parseHeader(text)
		if err != nil {
			return nil, s.badHeader(err.Error())
		}
		if name == "content-length" {
			n, big, err := parseLength(value)
			switch {
			case err != nil:
				return nil, s.badHeader(err.Error())
			case length >= 0 && n != length, huge != "" && big != huge:
				return nil, s.badHeader("two different Content-Length headers")
			}
			length, huge = n, big
		}
		s.r.Discard(len(line))
	}
	switch {
	case huge != "" || length > s.limit:
		// Skip by scanning, not by counting: the length may be a lie, and
		// counting would swallow the messages that follow it.
		s.resync = true
		if huge == "" {
			huge = strconv.Itoa(length)
		}
		return nil, s.tooLarge(huge + " bytes")
	case length < 0:
		s.resync = true
		return nil, &frameError{code: CodeParseError, msg: "parse error: the header block has no Content-Length header; " +
			"its body was skipped up to the next Content-Length header"}
	case length == 0:
		return nil, &frameError{code: CodeInvalidRequest, msg: "invalid request: Content-Length is 0, an empty message; " +
			"send each message's length in bytes"}
	}
	return s.readBody(length)
}

var errLineTooLong = errors.New("header line too long")

// peekLine returns the next line through its '\n' without consuming it,
// or errLineTooLong if none ends within MaxHeaderLine bytes: a header
// line is never held longer than that, however long it is.
func (s *Stream) peekLine() ([]byte, error) {
	const most = MaxHeaderLine + 2 // and "\r\n"
	want := 1
	for {
		buf, err := s.r.Peek(want)
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return buf[:i+1], nil
		}
		if len(buf) >= most {
			return nil, errLineTooLong
		}
		if err != nil {
			return buf, err
		}
		want = min(max(len(buf)+1, s.r.Buffered()), most)
	}
}

// badHeader answers a header block that cannot be trusted. The line at
// hand is not consumed but for its first byte: the next read skips to the
// next "Content-Length:", which may be further on in the same line.
func (s *Stream) badHeader(why string) error {
	s.r.Discard(1)
	s.resync = true
	return &frameError{code: CodeParseError, msg: "parse error: invalid Content-Length framing: " + why +
		"; the input was skipped up to the next Content-Length header"}
}

// parseHeader splits "Name: value", checking the name is an HTTP token and
// the value holds no control characters. The name comes back lower case.
func parseHeader(line []byte) (name string, value []byte, err error) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return "", nil, fmt.Errorf("%s is not a header line (no colon)", quoteClip(line))
	}
	if i == 0 {
		return "", nil, fmt.Errorf("%s has no header name", quoteClip(line))
	}
	for _, c := range line[:i] {
		if !isTokenChar(c) {
			return "", nil, fmt.Errorf("%s: the header name is not an HTTP token", quoteClip(line))
		}
	}
	for _, c := range line[i+1:] {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return "", nil, fmt.Errorf("%s: a header value holds a control character", quoteClip(line))
		}
	}
	return strings.ToLower(string(line[:i])), bytes.Trim(line[i+1:], " \t"), nil
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// parseLength reads a Content-Length value: decimal digits only. A value
// too large to be a message comes back as huge, in words.
func parseLength(v []byte) (n int, huge string, err error) {
	if len(v) == 0 {
		return 0, "", errors.New("Content-Length is empty")
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, "", fmt.Errorf("Content-Length %s is not a decimal number of bytes", quoteClip(v))
		}
	}
	if len(v) > 15 {
		return 0, fmt.Sprintf("a %d-digit number of", len(v)), nil
	}
	n, err = strconv.Atoi(string(v))
	return n, "", err
}

func quoteClip(b []byte) string {
	if len(b) > 80 {
		return strconv.Quote(string(b[:80])) + "…"
	}
	return strconv.Quote(string(b))
}

// headerName is what skipToHeader looks for, in any case.
const headerName = "content-length:"

// skipToHeader discards input up to the next "Content-Length:" in any
// case, looking at what is buffered and keeping only the tail that may be
// the start of the name: memory stays bounded however far it is.
func (s *Stream) skipToHeader() error {
	const n = len(headerName)
	for {
		buf, err := s.r.Peek(max(n, s.r.Buffered()))
		if i := indexHeader(buf); i >= 0 {
			s.r.Discard(i)
			return nil
		}
		if err != nil {
			s.r.Discard(len(buf))
			return err
		}
		s.r.Discard(len(buf) - (n - 1))
	}
}

// indexHeader finds headerName in b, in any case, by its '-'.
func indexHeader(b []byte) int {
	const dash = 7 // len("content")
	for off := 0; ; {
		j := bytes.IndexByte(b[off:], '-')
		if j < 0 {
			return -1
		}
		k := off + j - dash
		if k >= 0 && k+len(headerName) <= len(b) && bytes.EqualFold(b[k:k+len(headerName)], []byte(headerName)) {
			return k
		}
		off += j + 1
	}
}

// readBody reads a body the header says is n bytes long. When it starts
// with '{' or '[', its JSON structure is followed as it is read, which
// tells when the header lied: a value that ends before n bytes, followed
// by more than whitespace, means the header said too much, and the rest
// is the next message (nothing is lost); a value that has not ended after
// n bytes means it said too little, and the stream skips to the next
// header. The body is read in buffered chunks, not byte by byte.
func (s *Stream) readBody(n int) ([]byte, error) {
	if n > MaxPrompt {
		if head, _ := s.r.Peek(min(n, headProbe)); len(head) > 0 {
			if method, id := frameHead(head); method == acp.MethodSessionPrompt {
				return nil, s.skipBody(n, promptTooLarge(id, n))
			}
		}
	}
	body := make([]byte, 0, n)
	var sc bodyScan
	for len(body) < n {
		buf, err := s.r.Peek(min(n-len(body), max(s.r.Buffered(), 1)))
		if len(buf) == 0 {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if end := sc.feed(buf); end >= 0 {
			body = append(body, buf[:end]...)
			s.r.Discard(end)
			return nil, &frameError{code: CodeInvalidRequest, id: idOf(body), msg: fmt.Sprintf(
				"invalid request: Content-Length said %d, the message ended after %d bytes; it was not processed: "+
					"send the body's exact length in bytes", n, sc.ended)}
		}
		body = append(body, buf...)
		s.r.Discard(len(buf))
		sc.offset += len(buf)
	}
	if sc.tracking && sc.ended == 0 {
		s.resync = true
		return nil, &frameError{code: CodeParseError, msg: fmt.Sprintf("parse error: the message is not valid JSON after the %d bytes "+
			"Content-Length gave it (if the header said too little, the rest was skipped up to the next Content-Length header)", n)}
	}
	return body, nil
}

// skipBody reads a body of n bytes without keeping it, following its JSON
// structure as readBody does, and returns answer; a header that said too
// much or too little is handled as readBody handles it.
func (s *Stream) skipBody(n int, answer *frameError) error {
	var sc bodyScan
	for read := 0; read < n; {
		buf, err := s.r.Peek(min(n-read, max(s.r.Buffered(), 1)))
		if len(buf) == 0 {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if end := sc.feed(buf); end >= 0 {
			s.r.Discard(end)
			return answer
		}
		s.r.Discard(len(buf))
		read += len(buf)
		sc.offset += len(buf)
	}
	if sc.tracking && sc.ended == 0 {
		s.resync = true
	}
	return answer
}

// bodyScan follows the JSON structure of a body to find where its value
// ends: strings, escapes and nesting depth.
type bodyScan struct {
	offset    int  // bytes fed before the current chunk
	started   bool // past leading whitespace
	tracking  bool // the body starts with '{' or '['
	depth     int
	inString  bool
	escaped   bool
	ended     int // bytes up to the end of the value, once it ended
	untracked bool
}

// feed scans the next chunk of the body. It returns the offset in p of the
// first byte after the value's end that is not whitespace, or -1.
func (sc *bodyScan) feed(p []byte) int {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case sc.untracked:
			return -1
		case sc.ended > 0:
			if !isSpace(c) {
				return i
			}
		case sc.inString:
			if sc.escaped {
				sc.escaped = false
				continue
			}
			// Jump to the string's next quote or backslash.
			q := bytes.IndexByte(p[i:], '"')
			rest := p[i:]
			if q >= 0 {
				rest = p[i : i+q]
			}
			if b := bytes.IndexByte(rest, '\\'); b >= 0 {
				i += b
				sc.escaped = true
				continue
			}
			if q < 0 {
				return -1
			}
			i += q
			sc.inString = false
		case !sc.started:
			if isSpace(c) {
				continue
			}
			sc.started = true
			if c != '{' && c != '[' {
				sc.untracked = true
				return -1
			}
			sc.tracking, sc.depth = true, 1
		default:
			switch c {
			case '"':
				sc.inString = true
			case '{', '[':
				sc.depth++
			case '}', ']':
				sc.depth--
				if sc.depth == 0 {
					sc.ended = sc.offset + i + 1
				}
			}
		}
	}
	return -1
}
