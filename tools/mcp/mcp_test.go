//go:build unix

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/mcptest"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/tools"
)

// notes collects what a Set reports.
type notes struct {
	mu   sync.Mutex
	seen map[string]error
	ch   chan string
}

func newNotes() *notes { return &notes{seen: map[string]error{}, ch: make(chan string, 16)} }

func (n *notes) notify(server string, err error) {
	n.mu.Lock()
	n.seen[server] = err
	n.mu.Unlock()
	n.ch <- server
}

func (n *notes) wait(t *testing.T, server string) error {
	t.Helper()
	for {
		select {
		case s := <-n.ch:
			if s == server {
				n.mu.Lock()
				defer n.mu.Unlock()
				return n.seen[s]
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("server %q was not reported", server)
		}
	}
}

func start(t *testing.T, n *notes, servers ...Server) *Set {
	t.Helper()
	s := Start(servers, Options{Dir: t.TempDir(), Notify: n.notify, Environ: append(os.Environ(), "BRIDLE_TEST_API_KEY=bridle-secret-value-123")})
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func find(s *Set, name string) tools.Tool {
	for _, t := range s.Tools() {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

func names(s *Set) []string {
	var out []string
	for _, t := range s.Tools() {
		out = append(out, t.Name())
	}
	return out
}

func env(t *testing.T, key string, r *redact.Redactor) *tools.Env {
	arts, err := tools.NewArtifacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &tools.Env{Key: key, Artifacts: arts, Redactor: r}
}

func TestToolsCallsAndMeta(t *testing.T) {
	bin := mcptest.Binary(t)
	meta := filepath.Join(t.TempDir(), "meta.jsonl")
	n := newNotes()
	s := start(t, n, Server{Name: "test srv", Command: bin, Args: []string{"-meta", meta},
		Env: []Var{{"MCP_TEST_TOKEN", "tok-from-the-editor-42"}}})

	want := "mcp__test_srv__big mcp__test_srv__crash mcp__test_srv__deploy mcp__test_srv__echo mcp__test_srv__secret mcp__test_srv__sleep mcp__test_srv__spawn mcp__test_srv__write_note"
	if got := strings.Join(names(s), " "); got != want {
		t.Fatalf("tools = %s\nwant    %s", got, want)
	}
	tests := []struct {
		name   string
		effect permission.Effect
		kind   tools.Kind
	}{
		{"mcp__test_srv__echo", permission.EffectRead, tools.KindRead},
		{"mcp__test_srv__write_note", permission.EffectExecute, tools.KindOther},
	}
	for _, tt := range tests {
		tool := find(s, tt.name)
		if tool.Effect() != tt.effect || tool.Kind() != tt.kind {
			t.Errorf("%s: effect %v kind %v, want %v %v", tt.name, tool.Effect(), tool.Kind(), tt.effect, tt.kind)
		}
	}
	// The registry compiles every schema the server sent.
	reg := tools.NewRegistry(permission.ModeAsk, s.Tools())
	if err := reg.Check(find(s, "mcp__test_srv__echo"), json.RawMessage(`{"text": 5}`)); err == nil {
		t.Error("a number passed for a string property")
	}

	res := find(s, "mcp__test_srv__echo").Run(context.Background(), env(t, "ses_x/7/1", nil), json.RawMessage(`{"text":"hi"}`))
	if res.IsError || res.Output != "echo: hi" {
		t.Fatalf("echo = %+v", res)
	}
	b, _ := os.ReadFile(meta)
	if !strings.Contains(string(b), `"`+KeyMeta+`":"ses_x/7/1"`) {
		t.Errorf("the server did not see the key in _meta: %s", b)
	}

	// The editor's secret-named values and bridle's own are redacted; the
	// server never got bridle's (it is not in its environment).
	r := redact.New(nil)
	r.AddValue("tok-from-the-editor-42", "mcp:MCP_TEST_TOKEN")
	res = find(s, "mcp__test_srv__secret").Run(context.Background(), env(t, "ses_x/8/0", r), nil)
	if strings.Contains(res.Output, "tok-from-the-editor-42") || !strings.Contains(res.Output, "[REDACTED") {
		t.Errorf("secret output not redacted: %q", res.Output)
	}
	if strings.Contains(res.Output, "bridle-secret-value-123") {
		t.Errorf("the server inherited a secret-named variable: %q", res.Output)
	}

	// A big output is capped and spilled to the call's artifact.
	res = find(s, "mcp__test_srv__big").Run(context.Background(), env(t, "ses_x/9/0", nil), json.RawMessage(`{"lines": 5000}`))
	if res.Artifact != "a9.0" || res.Lines != 5000 || strings.Count(res.Output, "\n") > 400 {
		t.Errorf("big output: artifact %q, %d lines, %d shown", res.Artifact, res.Lines, strings.Count(res.Output, "\n"))
	}

	// Cancelling a call reaches the server.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !strings.Contains(readFile(meta), `"started"`) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	res = find(s, "mcp__test_srv__sleep").Run(ctx, env(t, "ses_x/10/0", nil), json.RawMessage(`{"ms": 60000}`))
	if !res.IsError || !strings.Contains(res.Output, "cancelled") {
		t.Errorf("cancelled call = %+v", res)
	}
	waitFor(t, func() bool { return strings.Contains(readFile(meta), `"cancelled"`) })
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10 s")
}

func TestFailuresAreReportedAndTheRestWorks(t *testing.T) {
	bin := mcptest.Binary(t)
	n := newNotes()
	s := start(t, n,
		Server{Name: "good", Command: bin},
		Server{Name: "missing", Command: "/nonexistent/mcp-server"},
		Server{Name: "broken", Command: bin, Args: []string{"-fail", "no config file found"}},
	)
	if err := n.wait(t, "missing"); err == nil || !strings.Contains(err.Error(), "could not be started") {
		t.Errorf("missing: %v", err)
	}
	n.mu.Lock()
	broken := n.seen["broken"]
	n.mu.Unlock()
	if broken == nil || !strings.Contains(broken.Error(), "no config file found") {
		t.Errorf("broken server: %v (want its stderr)", broken)
	}
	if find(s, "mcp__good__echo") == nil || find(s, "mcp__broken__echo") != nil {
		t.Fatalf("tools = %v", names(s))
	}
	if why := s.Why("mcp__broken__echo"); !strings.Contains(why, "no config file found") {
		t.Errorf("Why = %q", why)
	}

	// A server that dies is reported once, its tools go, and calls say why.
	crash := find(s, "mcp__good__crash")
	echo := find(s, "mcp__good__echo")
	res := crash.Run(context.Background(), env(t, "k/1/0", nil), nil)
	if !res.IsError || !strings.Contains(res.Output, "the call was cut short") {
		t.Errorf("crash call = %+v", res)
	}
	err := n.wait(t, "good")
	if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "crashing on purpose") {
		t.Errorf("death reported as %v", err)
	}
	if len(s.Tools()) != 0 {
		t.Errorf("tools of a dead server still offered: %v", names(s))
	}
	if res := echo.Run(context.Background(), env(t, "k/2/0", nil), json.RawMessage(`{"text":"x"}`)); !res.IsError || !strings.Contains(res.Output, "stopped") {
		t.Errorf("call to a dead server = %+v", res)
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	bin := mcptest.Binary(t)
	tag := "close-" + strconv.Itoa(os.Getpid())
	n := newNotes()
	s := start(t, n, Server{Name: "a", Command: bin, Args: []string{"-tag", tag}})
	res := find(s, "mcp__a__spawn").Run(context.Background(), env(t, "k/1/0", nil), nil)
	pid, err := strconv.Atoi(strings.TrimPrefix(res.Output, "started "))
	if err != nil {
		t.Fatalf("spawn = %+v", res)
	}
	if count(tag) != 1 {
		t.Fatalf("%d server processes before close", count(tag))
	}
	s.Close()
	if count(tag) != 0 {
		t.Errorf("server still running after Close")
	}
	// The server's own child went with its process group.
	waitFor(t, func() bool { return syscall.Kill(pid, 0) != nil || zombie(pid) })
	select {
	case srv := <-n.ch:
		t.Errorf("closing reported %q as failed", srv)
	default:
	}
}

// zombie reports a process that has exited but is not yet reaped (its
// parent, the test server, is gone, so init reaps it soon).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// count counts live processes whose command line contains s.
func count(s string) int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(b), s) && !zombie(mustAtoi(filepath.Base(d))) {
			n++
		}
	}
	return n
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func TestHTTPServerWithHeaders(t *testing.T) {
	url := mcptest.StartHTTP(t, "let-me-in")

	n := newNotes()
	s := start(t, n,
		Server{Name: "web", Type: HTTP, URL: url, Headers: []Var{{"X-Test-Auth", "let-me-in"}}},
		Server{Name: "nokey", Type: HTTP, URL: url},
	)
	if err := n.wait(t, "nokey"); err == nil {
		t.Error("a server refusing the handshake was not reported")
	}
	echo := find(s, "mcp__web__echo")
	if echo == nil {
		t.Fatalf("tools = %v", names(s))
	}
	if res := echo.Run(context.Background(), env(t, "k/1/0", nil), json.RawMessage(`{"text":"over http"}`)); res.Output != "echo: over http" {
		t.Errorf("echo = %+v", res)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		servers []Server
		want    string
	}{
		{"ok", []Server{{Name: "a", Command: "x"}, {Name: "b", Type: HTTP, URL: "https://example.com/mcp"}}, ""},
		{"no name", []Server{{Command: "x"}}, "name is empty"},
		{"no command", []Server{{Name: "a"}}, "command is empty"},
		{"bad url", []Server{{Name: "a", Type: HTTP, URL: "ftp://x"}}, "not an http(s) URL"},
		{"sse", []Server{{Name: "a", Type: "sse", URL: "https://x"}}, "not supported"},
		{"names collide", []Server{{Name: "a b", Command: "x"}, {Name: "a_b", Command: "y"}}, "both become"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.servers)
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Check = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestToolName(t *testing.T) {
	if got := ToolName("my server", "do.it"); got != "mcp__my_server__do_it" {
		t.Errorf("ToolName = %q", got)
	}
	long := ToolName(strings.Repeat("s", 40), strings.Repeat("t", 40))
	other := ToolName(strings.Repeat("s", 40), strings.Repeat("t", 41))
	if len(long) > maxName || long == other {
		t.Errorf("long names: %q (%d), %q", long, len(long), other)
	}
}

// BenchmarkCall measures one read-only call's round trip through the
// SDK and the test server, output capping and redaction included.
func BenchmarkCall(b *testing.B) {
	bin := mcptest.Binary(b)
	s := Start([]Server{{Name: "b", Command: bin}}, Options{Dir: b.TempDir()})
	defer s.Close()
	if err := s.Ready(context.Background()); err != nil {
		b.Fatal(err)
	}
	var echo tools.Tool
	for _, tool := range s.Tools() {
		if tool.Name() == "mcp__b__echo" {
			echo = tool
		}
	}
	if echo == nil {
		b.Fatal("no echo tool")
	}
	e := &tools.Env{Key: "k/1/0"}
	in := json.RawMessage(`{"text":"hello"}`)
	b.ResetTimer()
	for b.Loop() {
		if res := echo.Run(context.Background(), e, in); res.IsError {
			b.Fatal(res.Output)
		}
	}
}

// BenchmarkStartAndClose measures starting a stdio server (process, SDK
// handshake, tools listed) and stopping it.
func BenchmarkStartAndClose(b *testing.B) {
	bin := mcptest.Binary(b)
	for b.Loop() {
		s := Start([]Server{{Name: "b", Command: bin}}, Options{Dir: b.TempDir()})
		if err := s.Ready(context.Background()); err != nil {
			b.Fatal(err)
		}
		if len(s.Tools()) == 0 {
			b.Fatal("no tools")
		}
		s.Close()
	}
}
