package box

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	MaybeRunHelper()
	os.Exit(m.Run())
}

// syncBuffer is an output sink safe for the box's copying goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func run(t *testing.T, b *Box, dir, command string, tweak ...func(*Spec)) (Outcome, string) {
	t.Helper()
	var out syncBuffer
	s := Spec{Command: command, Dir: dir, Writable: []string{dir}, Output: &out, Timeout: 20 * time.Second,
		MemoryBytes: 1 << 30, Processes: 512, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir}}
	for _, f := range tweak {
		f(&s)
	}
	o, err := b.Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return o, out.String()
}

// TestRunStdin: Spec.Stdin is what the command reads, whole, also past a
// pipe's buffer; without it the command reads nothing.
func TestRunStdin(t *testing.T) {
	b := New(Options{})
	dir := t.TempDir()
	big := strings.Repeat("event ", 50000) + "END"
	for _, c := range []struct {
		stdin []byte
		want  string
	}{
		{[]byte(`{"hook_event_name":"PreToolUse"}`), `{"hook_event_name":"PreToolUse"}`},
		{[]byte(big), big},
		{nil, ""},
	} {
		o, out := run(t, b, dir, "cat", func(s *Spec) { s.Stdin = c.stdin })
		if o.ExitCode != 0 || out != c.want {
			t.Errorf("stdin of %d bytes: exit %d, read %d bytes (%.40q)", len(c.stdin), o.ExitCode, len(out), out)
		}
	}
}

// A command given a StdinPipe reads it (a background command's input); the
// others read /dev/null.
func TestRunStdinPipe(t *testing.T) {
	b := New(Options{})
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.WriteString("from the pipe\n")
	w.Close()
	o, out := run(t, b, dir, "cat; echo; echo err >&2", func(s *Spec) { s.StdinPipe = r })
	if o.ExitCode != 0 || out != "from the pipe\n\nerr\n" {
		t.Fatalf("outcome %+v output %q", o, out)
	}
	if _, out := run(t, b, dir, "cat; echo end"); out != "end\n" {
		t.Fatalf("without Stdin: %q", out)
	}
}
