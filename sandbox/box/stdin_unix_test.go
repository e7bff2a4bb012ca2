//go:build unix

package box

import (
	"os"
	"strings"
	"testing"
)

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
