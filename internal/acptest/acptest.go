// Package acptest drives the real bridle binary over real pipes, as an
// editor would, for end-to-end tests. It records every message bridle
// writes so tests can validate them against the official ACP schema.
package acptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Root returns the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of a bridle binary built from this checkout
// once per test process ($BRIDLE_BIN overrides it).
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("BRIDLE_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bridle-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "bridle")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Framing is how the client frames its messages.
type Framing int

const (
	NDJSON Framing = iota
	ContentLength
)

// Options start an agent.
type Options struct {
	DB      string   // database file; a temp one if empty
	Model   string   // BRIDLE_MODEL; "scripted/<path>" plays a scenario file
	Framing Framing  // the client's framing
	Env     []string // extra environment
	Args    []string // extra arguments
	// DefaultDB starts bridle without BRIDLE_DB (nor --db), so it uses
	// its default database under $XDG_DATA_HOME or $HOME as Env gives
	// them; Agent.DB is that path. DB is ignored.
	DefaultDB bool
	// Unset removes variables from the environment bridle inherits.
	Unset []string
}

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

// Agent is a running bridle process and the client end of its pipes.
type Agent struct {
	t       testing.TB
	Cmd     *exec.Cmd
	DB      string
	framing Framing
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

// Start runs bridle and connects to it.
func Start(t testing.TB, o Options) *Agent {
	t.Helper()
	unset := o.Unset
	if o.DefaultDB {
		unset = append(unset, "BRIDLE_DB")
	} else if o.DB == "" {
		o.DB = filepath.Join(t.TempDir(), "bridle.db")
	}
	cmd := exec.Command(Binary(t), o.Args...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(unset, k) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if !o.DefaultDB {
		cmd.Env = append(cmd.Env, "BRIDLE_DB="+o.DB)
	}
	cmd.Env = append(cmd.Env, "BRIDLE_MODEL="+o.Model, "BRIDLE_LOG=debug")
	cmd.Env = append(cmd.Env, o.Env...)
	if o.DefaultDB {
		o.DB = defaultDB(cmd.Env)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{t: t, Cmd: cmd, DB: o.DB, framing: o.Framing, stdin: stdin, stderr: &bytes.Buffer{},
		methods: map[string]string{}, pending: map[string]chan Msg{}, exited: make(chan struct{})}
	cmd.Stderr = &lockedWriter{w: a.stderr, mu: &a.mu}
	a.cond = sync.NewCond(&a.mu)
	a.OnRequest = func(m Msg) (any, *RPCError) {
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
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go a.read(bufio.NewReaderSize(stdout, 1<<20))
	t.Cleanup(func() {
		a.stdin.Close()
		select {
		case <-a.exited:
		case <-time.After(10 * time.Second):
			a.Cmd.Process.Kill()
			<-a.exited
		}
		// Every message bridle wrote, in every test, must be valid ACP.
		for _, s := range a.Sent() {
			if err := Validate(s); err != nil {
				t.Errorf("invalid ACP message: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("bridle stderr:\n%s", a.Stderr())
		}
	})
	return a
}

// defaultDB is where bridle puts its database in the environment env
// (the last value of a variable counts, as for exec.Cmd):
// $XDG_DATA_HOME/bridle/bridle.db, else ~/.local/share/bridle/bridle.db.
func defaultDB(env []string) string {
	get := func(key string) string {
		v := ""
		for _, kv := range env {
			if k, val, ok := strings.Cut(kv, "="); ok && k == key {
				v = val
			}
		}
		return v
	}
	dir := get("XDG_DATA_HOME")
	if dir == "" {
		dir = filepath.Join(get("HOME"), ".local", "share")
	}
	return filepath.Join(dir, "bridle", "bridle.db")
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

// Stderr returns what bridle logged so far.
func (a *Agent) Stderr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stderr.String()
}

func (a *Agent) read(r *bufio.Reader) {
	defer func() {
		a.Cmd.Wait()
		close(a.exited)
		a.mu.Lock()
		for _, ch := range a.pending {
			close(ch)
		}
		a.pending = map[string]chan Msg{}
		a.cond.Broadcast()
		a.mu.Unlock()
	}()
	for {
		frame, err := readFrame(r, a.framing)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				a.mu.Lock()
				a.readErr = err
				a.mu.Unlock()
			}
			return
		}
		var m Msg
		if err := json.Unmarshal(frame, &m); err != nil {
			a.mu.Lock()
			a.readErr = fmt.Errorf("bridle wrote something that is not a JSON-RPC message: %q", frame)
			a.mu.Unlock()
			return
		}
		a.mu.Lock()
		s := Sent{Raw: append(json.RawMessage(nil), frame...)}
		if m.Method == "" && m.ID != nil {
			s.Method = a.methods[string(*m.ID)]
		}
		a.sent = append(a.sent, s)
		switch {
		case m.Method != "" && m.ID != nil:
			a.mu.Unlock()
			go a.answer(m)
			continue
		case m.Method != "":
			a.notes = append(a.notes, m)
			a.cond.Broadcast()
		case m.ID != nil:
			if ch, ok := a.pending[string(*m.ID)]; ok {
				delete(a.pending, string(*m.ID))
				ch <- m
			} else {
				// An answer to a message the client could not label
				// (malformed input): keep it where tests can find it.
				a.notes = append(a.notes, m)
				a.cond.Broadcast()
			}
		default:
			// An answer with a null id: to a message bridle could not
			// attribute (malformed input).
			a.notes = append(a.notes, m)
			a.cond.Broadcast()
		}
		a.mu.Unlock()
	}
}

func (a *Agent) answer(m Msg) {
	result, rerr := a.OnRequest(m)
	reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if rerr != nil {
		reply["error"] = rerr
	} else {
		reply["result"] = result
	}
	a.write(reply)
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
func (a *Agent) WriteRaw(b []byte) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if _, err := a.stdin.Write(b); err != nil {
		a.t.Errorf("write to bridle: %v", err)
	}
}

// WriteFrame writes one message body in the client's framing.
func (a *Agent) WriteFrame(body []byte) {
	if a.framing == ContentLength {
		a.WriteRaw(append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...))
		return
	}
	a.WriteRaw(append(body, '\n'))
}

func (a *Agent) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		a.t.Fatal(err)
	}
	a.WriteFrame(b)
}

// Request sends a request and returns a channel for its answer.
func (a *Agent) Request(method string, params any) (id string, answer <-chan Msg) {
	a.mu.Lock()
	a.nextID++
	id = strconv.Itoa(a.nextID)
	ch := make(chan Msg, 1)
	a.pending[id] = ch
	a.methods[id] = method
	a.mu.Unlock()
	a.write(map[string]any{"jsonrpc": "2.0", "id": a.nextIDValue(id), "method": method, "params": params})
	return id, ch
}

func (a *Agent) nextIDValue(id string) any {
	n, _ := strconv.Atoi(id)
	return n
}

// Wait waits for an answer.
func (a *Agent) Wait(answer <-chan Msg) (json.RawMessage, *RPCError) {
	a.t.Helper()
	select {
	case m, ok := <-answer:
		if !ok {
			a.t.Fatalf("bridle exited before answering; stderr:\n%s", a.Stderr())
		}
		return m.Result, m.Error
	case <-time.After(30 * time.Second):
		a.t.Fatalf("no answer within 30s; stderr:\n%s", a.Stderr())
	}
	return nil, nil
}

// Call sends a request and waits for its answer.
func (a *Agent) Call(method string, params any) (json.RawMessage, *RPCError) {
	a.t.Helper()
	_, ch := a.Request(method, params)
	return a.Wait(ch)
}

// MustCall is Call that fails the test on an error answer, decoding the
// result into out (if not nil).
func (a *Agent) MustCall(method string, params any, out any) {
	a.t.Helper()
	res, err := a.Call(method, params)
	if err != nil {
		a.t.Fatalf("%s: %v", method, err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			a.t.Fatalf("%s: decode %s: %v", method, res, err)
		}
	}
}

// Notify sends a notification.
func (a *Agent) Notify(method string, params any) {
	a.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Notes returns the notifications (and unlabelled answers) received.
func (a *Agent) Notes() []Msg {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Msg(nil), a.notes...)
}

// NotesLocked returns the notifications received; call it only from a
// WaitNote predicate, which runs with the lock held.
func (a *Agent) NotesLocked() []Msg { return a.notes }

// WaitNote waits until a received notification satisfies ok.
func (a *Agent) WaitNote(ok func(Msg) bool) Msg {
	a.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	timer := time.AfterFunc(30*time.Second, func() {
		a.mu.Lock()
		a.cond.Broadcast()
		a.mu.Unlock()
	})
	defer timer.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		for _, m := range a.notes {
			if ok(m) {
				return m
			}
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("timed out waiting for a notification; stderr:\n%s", a.stderr.String())
		}
		select {
		case <-a.exited:
			a.t.Fatalf("bridle exited while waiting for a notification; stderr:\n%s", a.stderr.String())
		default:
		}
		a.cond.Wait()
	}
}

// Sent returns every message bridle wrote so far.
func (a *Agent) Sent() []Sent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Sent(nil), a.sent...)
}

// ReadErr reports output bridle wrote that was not a protocol message.
func (a *Agent) ReadErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.readErr
}

// CloseStdin ends bridle's input and waits for it to exit, returning its
// exit code.
func (a *Agent) CloseStdin() int {
	a.t.Helper()
	a.stdin.Close()
	return a.WaitExit()
}

// WaitExit waits for the process to end and returns its exit code.
func (a *Agent) WaitExit() int {
	a.t.Helper()
	select {
	case <-a.exited:
	case <-time.After(15 * time.Second):
		a.t.Fatalf("bridle did not exit; stderr:\n%s", a.Stderr())
	}
	return a.Cmd.ProcessState.ExitCode()
}

// Signal sends sig to the process.
func (a *Agent) Signal(sig syscall.Signal) {
	if err := a.Cmd.Process.Signal(sig); err != nil {
		a.t.Fatal(err)
	}
}

// Kill ends the process with SIGKILL and waits for it.
func (a *Agent) Kill() {
	a.Cmd.Process.Kill()
	<-a.exited
}

// Exited is closed when the process has ended.
func (a *Agent) Exited() <-chan struct{} { return a.exited }

// Run runs the bridle binary with args and returns its combined output.
func Run(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
