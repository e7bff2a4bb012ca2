// Package acptest drives the real bridle binary over real pipes, as an
// editor would, for end-to-end tests. It records every message bridle
// writes so tests can validate them against the official ACP schema.
package acptest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acpclient"
	"github.com/bridle-dev/bridle/redact"
)

// Root returns the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	buildOnce sync.Once
	binDir    string // where the binary was built; Main removes it
	binPath   string
	buildErr  error
)

// Cleanup removes the binary Binary built, so that tests leave nothing
// in the temporary directory: a test package's TestMain calls it once its
// tests have run.
func Cleanup() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

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
		binDir = dir
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

// The wire types are internal/acpclient's.
type (
	Framing  = acpclient.Framing
	Msg      = acpclient.Msg
	RPCError = acpclient.RPCError
	Sent     = acpclient.Sent
)

const (
	NDJSON        = acpclient.NDJSON
	ContentLength = acpclient.ContentLength
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
	// Bin, if set, is the binary to run in place of Binary's, so that a
	// benchmark can compare two builds in one run.
	Bin string
	// Home, if set, is bridle's $HOME, with the XDG base-directory
	// variables unset (xdgDirs): its settings, database and cache are in
	// their default places under it, as on a machine that sets none.
	Home string
	// Unchecked leaves bridle's messages unchecked against the schema
	// when the test ends: for benchmarks whose sessions exchange
	// hundreds of thousands of the messages the other tests check.
	Unchecked bool
}

// xdgDirs are the XDG base-directory variables, which say where bridle
// keeps its files in place of the defaults under $HOME.
var xdgDirs = []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"}

// Agent is a running bridle process and the client end of its pipes
// (an acpclient.Conn whose failures fail the test).
type Agent struct {
	*acpclient.Conn
	t  testing.TB
	DB string
}

// Start runs bridle and connects to it.
func Start(t testing.TB, o Options) *Agent {
	t.Helper()
	unset := slices.Clone(o.Unset)
	if o.Home != "" {
		unset = append(unset, xdgDirs...)
	}
	if o.DefaultDB {
		unset = append(unset, "BRIDLE_DB")
	} else if o.DB == "" {
		o.DB = filepath.Join(t.TempDir(), "bridle.db")
	}
	bin := o.Bin
	if bin == "" {
		bin = Binary(t)
	}
	cmd := exec.Command(bin, o.Args...)
	for _, kv := range os.Environ() {
		// The machine's secret-named variables (a CI's GITHUB_TOKEN) would
		// be known values to bridle's redaction, which then holds back or
		// replaces whatever text resembles them: a test sets the secrets
		// it means in Env.
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(unset, k) && !redact.SecretName(k) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if !o.DefaultDB {
		cmd.Env = append(cmd.Env, "BRIDLE_DB="+o.DB)
	}
	cmd.Env = append(cmd.Env, "BRIDLE_MODEL="+o.Model, "BRIDLE_LOG=debug")
	if o.Home != "" {
		cmd.Env = append(cmd.Env, "HOME="+o.Home)
	}
	cmd.Env = append(cmd.Env, o.Env...)
	if o.DefaultDB {
		o.DB = defaultDB(cmd.Env)
	}
	conn, err := acpclient.Start(cmd, acpclient.Options{Framing: o.Framing})
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{Conn: conn, t: t, DB: o.DB}
	t.Cleanup(func() {
		a.Conn.CloseStdin()
		if _, err := a.Conn.WaitExit(10 * time.Second); err != nil {
			a.Conn.Kill()
		}
		// Every message bridle wrote, in every test, must be valid ACP.
		for _, s := range a.Sent() {
			if o.Unchecked {
				break
			}
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

// WriteRaw writes bytes to bridle's stdin as they are.
func (a *Agent) WriteRaw(b []byte) {
	if err := a.Conn.WriteRaw(b); err != nil {
		a.t.Error(err)
	}
}

// WriteFrame writes one message body in the client's framing.
func (a *Agent) WriteFrame(body []byte) {
	if err := a.Conn.WriteFrame(body); err != nil {
		a.t.Error(err)
	}
}

// Request sends a request and returns a channel for its answer.
func (a *Agent) Request(method string, params any) (id string, answer <-chan Msg) {
	id, answer, err := a.Conn.Request(method, params)
	if err != nil {
		a.t.Error(err)
	}
	return id, answer
}

// Wait waits for an answer.
func (a *Agent) Wait(answer <-chan Msg) (json.RawMessage, *RPCError) {
	a.t.Helper()
	m, err := a.Conn.Wait(answer, 30*time.Second)
	if err != nil {
		a.t.Fatalf("%v; stderr:\n%s", err, a.Stderr())
	}
	return m.Result, m.Error
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
	if err := a.Conn.Notify(method, params); err != nil {
		a.t.Error(err)
	}
}

// WaitNote waits until a received notification satisfies ok.
func (a *Agent) WaitNote(ok func(Msg) bool) Msg {
	a.t.Helper()
	m, err := a.Conn.WaitNote(ok, 30*time.Second)
	if err != nil {
		a.t.Fatalf("%v; stderr:\n%s", err, a.Stderr())
	}
	return m
}

// CloseStdin ends bridle's input and waits for it to exit, returning its
// exit code.
func (a *Agent) CloseStdin() int {
	a.t.Helper()
	a.Conn.CloseStdin()
	return a.WaitExit()
}

// WaitExit waits for the process to end and returns its exit code.
func (a *Agent) WaitExit() int {
	a.t.Helper()
	code, err := a.Conn.WaitExit(15 * time.Second)
	if err != nil {
		a.t.Fatalf("%v; stderr:\n%s", err, a.Stderr())
	}
	return code
}

// Signal sends sig to the process.
func (a *Agent) Signal(sig syscall.Signal) {
	if err := a.Conn.Signal(sig); err != nil {
		a.t.Fatal(err)
	}
}

// Run runs the bridle binary with args and returns its combined output.
func Run(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
