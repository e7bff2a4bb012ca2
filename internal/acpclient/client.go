package acpclient

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Framing is how the client frames its messages.
type Framing int

const (
	NDJSON Framing = iota
	ContentLength
)

// Msg is one JSON-RPC message.
type Msg struct {
	ID     *json.RawMessage `json:"id,omitempty"`
	Method string           `json:"method,omitempty"`
	Params json.RawMessage  `json:"params,omitempty"`
	Result json.RawMessage  `json:"result,omitempty"`
	Error  *RPCError        `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error answer.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// Sent is one message bridle wrote, with the request method it answers.
type Sent struct {
	Raw json.RawMessage
	// Method is the method of the request a response answers, when known.
	Method string
}

// Options start a connection.
type Options struct {
	Framing Framing
	// Stderr receives the process's stderr; when nil it is kept, and
	// Stderr returns it.
	Stderr io.Writer
	// OnNote, if set, sees each notification as it arrives, in order,
	// before the answers that follow it.
	OnNote func(Msg)
}

// Conn is a running bridle process and the client end of its pipes.
type Conn struct {
	Cmd     *exec.Cmd
	framing Framing
	onNote  func(Msg)
	stdin   io.WriteCloser
	stderr  *bytes.Buffer

	writeMu sync.Mutex
	mu      sync.Mutex
	cond    *sync.Cond
	nextID  int
	methods map[string]string // request id → method, to label responses
	pending map[string]chan Msg
	sent    []Sent
	notes   []Msg // notifications from bridle, in order
	readErr error
	exited  chan struct{}

	// OnRequest answers requests from bridle (session/request_permission);
	// the default selects the first option.
	OnRequest func(m Msg) (result any, err *RPCError)
}

// Start starts cmd (not yet started) and connects to its stdin and stdout.
func Start(cmd *exec.Cmd, o Options) (*Conn, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &Conn{Cmd: cmd, framing: o.Framing, onNote: o.OnNote, stdin: stdin, stderr: &bytes.Buffer{},
		methods: map[string]string{}, pending: map[string]chan Msg{}, exited: make(chan struct{})}
	if o.Stderr != nil {
		cmd.Stderr = o.Stderr
	} else {
		cmd.Stderr = &lockedWriter{w: c.stderr, mu: &c.mu}
	}
	c.cond = sync.NewCond(&c.mu)
	c.OnRequest = FirstOption
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go c.read(bufio.NewReaderSize(stdout, 1<<20))
	return c, nil
}

// FirstOption answers a permission question with its first option.
func FirstOption(m Msg) (any, *RPCError) {
	var p struct {
		Options []struct {
			OptionID string `json:"optionId"`
		} `json:"options"`
	}
	json.Unmarshal(m.Params, &p)
	if len(p.Options) == 0 {
		return nil, &RPCError{Code: -32601, Message: "unhandled"}
	}
	return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": p.Options[0].OptionID}}, nil
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Stderr returns what bridle logged so far, when Options.Stderr was nil.
func (c *Conn) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

func (c *Conn) read(r *bufio.Reader) {
	defer func() {
		c.Cmd.Wait()
		close(c.exited)
		c.mu.Lock()
		for _, ch := range c.pending {
			close(ch)
		}
		c.pending = map[string]chan Msg{}
		c.cond.Broadcast()
		c.mu.Unlock()
	}()
	for {
		frame, err := readFrame(r, c.framing)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.mu.Lock()
				c.readErr = err
				c.mu.Unlock()
			}
			return
		}
		var m Msg
		if err := json.Unmarshal(frame, &m); err != nil {
			c.mu.Lock()
			c.readErr = fmt.Errorf("bridle wrote something that is not a JSON-RPC message: %q", frame)
			c.mu.Unlock()
			return
		}
		if m.Method != "" && m.ID == nil && c.onNote != nil {
			c.onNote(m)
		}
		c.mu.Lock()
		s := Sent{Raw: append(json.RawMessage(nil), frame...)}
		if m.Method == "" && m.ID != nil {
			s.Method = c.methods[string(*m.ID)]
		}
		c.sent = append(c.sent, s)
		switch {
		case m.Method != "" && m.ID != nil:
			c.mu.Unlock()
			go c.answer(m)
			continue
		case m.Method != "":
			c.notes = append(c.notes, m)
			c.cond.Broadcast()
		case m.ID != nil:
			if ch, ok := c.pending[string(*m.ID)]; ok {
				delete(c.pending, string(*m.ID))
				ch <- m
			} else {
				// An answer to a message the client could not label
				// (malformed input): keep it where tests can find it.
				c.notes = append(c.notes, m)
				c.cond.Broadcast()
			}
		default:
			// An answer with a null id: to a message bridle could not
			// attribute (malformed input).
			c.notes = append(c.notes, m)
			c.cond.Broadcast()
		}
		c.mu.Unlock()
	}
}

func (c *Conn) answer(m Msg) {
	result, rerr := c.OnRequest(m)
	reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if rerr != nil {
		reply["error"] = rerr
	} else {
		reply["result"] = result
	}
	c.write(reply)
}

func readFrame(r *bufio.Reader, f Framing) ([]byte, error) {
	if f == NDJSON {
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				return bytes.TrimSpace(line), nil
			}
			if err != nil {
				return nil, err
			}
		}
	}
	length := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, _ := strings.Cut(line, ":")
		if strings.EqualFold(name, "Content-Length") {
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
	}
	if length < 0 {
		return nil, errors.New("bridle sent a header block without Content-Length")
	}
	body := make([]byte, length)
	_, err := io.ReadFull(r, body)
	return body, err
}

// WriteRaw writes bytes to bridle's stdin as they are.
func (c *Conn) WriteRaw(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.stdin.Write(b); err != nil {
		return fmt.Errorf("write to bridle: %w", err)
	}
	return nil
}

// WriteFrame writes one message body in the client's framing.
func (c *Conn) WriteFrame(body []byte) error {
	if c.framing == ContentLength {
		return c.WriteRaw(append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...))
	}
	return c.WriteRaw(append(body, '\n'))
}

func (c *Conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.WriteFrame(b)
}

// Request sends a request and returns a channel for its answer, closed
// without one if bridle exits first.
func (c *Conn) Request(method string, params any) (id string, answer <-chan Msg, err error) {
	c.mu.Lock()
	c.nextID++
	id = strconv.Itoa(c.nextID)
	ch := make(chan Msg, 1)
	c.pending[id] = ch
	c.methods[id] = method
	c.mu.Unlock()
	return id, ch, c.write(map[string]any{"jsonrpc": "2.0", "id": c.idValue(id), "method": method, "params": params})
}

func (c *Conn) idValue(id string) any {
	n, _ := strconv.Atoi(id)
	return n
}

// Wait waits up to timeout for an answer.
func (c *Conn) Wait(answer <-chan Msg, timeout time.Duration) (Msg, error) {
	select {
	case m, ok := <-answer:
		if !ok {
			return Msg{}, errors.New("bridle exited before answering")
		}
		return m, nil
	case <-time.After(timeout):
		return Msg{}, fmt.Errorf("no answer within %s", timeout)
	}
}

// Call sends a request and waits up to timeout for its answer, decoding
// the result into out (if not nil). An error answer is an *RPCError.
func (c *Conn) Call(method string, params, out any, timeout time.Duration) error {
	_, ch, err := c.Request(method, params)
	if err != nil {
		return err
	}
	m, err := c.Wait(ch, timeout)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if m.Error != nil {
		return m.Error
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			return fmt.Errorf("%s: decode %s: %w", method, m.Result, err)
		}
	}
	return nil
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	return c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Notes returns the notifications (and unlabelled answers) received.
func (c *Conn) Notes() []Msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Msg(nil), c.notes...)
}

// NotesLocked returns the notifications received; call it only from a
// WaitNote predicate, which runs with the lock held.
func (c *Conn) NotesLocked() []Msg { return c.notes }

// WaitNote waits up to timeout until a received notification satisfies
// ok.
func (c *Conn) WaitNote(ok func(Msg) bool, timeout time.Duration) (Msg, error) {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for _, m := range c.notes {
			if ok(m) {
				return m, nil
			}
		}
		if time.Now().After(deadline) {
			return Msg{}, errors.New("timed out waiting for a notification")
		}
		select {
		case <-c.exited:
			return Msg{}, errors.New("bridle exited while waiting for a notification")
		default:
		}
		c.cond.Wait()
	}
}

// Sent returns every message bridle wrote so far.
func (c *Conn) Sent() []Sent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Sent(nil), c.sent...)
}

// ReadErr reports output bridle wrote that was not a protocol message.
func (c *Conn) ReadErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// CloseStdin ends bridle's input (bridle then exits).
func (c *Conn) CloseStdin() error { return c.stdin.Close() }

// WaitExit waits up to timeout for the process to end and returns its
// exit code.
func (c *Conn) WaitExit(timeout time.Duration) (int, error) {
	select {
	case <-c.exited:
	case <-time.After(timeout):
		return -1, fmt.Errorf("bridle did not exit within %s", timeout)
	}
	return c.Cmd.ProcessState.ExitCode(), nil
}

// Signal sends sig to the process.
func (c *Conn) Signal(sig syscall.Signal) error { return c.Cmd.Process.Signal(sig) }

// Kill ends the process with SIGKILL and waits for it.
func (c *Conn) Kill() {
	c.Cmd.Process.Kill()
	<-c.exited
}

// Exited is closed when the process has ended.
func (c *Conn) Exited() <-chan struct{} { return c.exited }
