//go:build linux

package box

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// spareOf waits for the box's spare helper after a command.
func spareOf(t *testing.T, b *Box) *helper {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b.spareMu.Lock()
		h := b.spare
		b.spareMu.Unlock()
		if h != nil {
			return h
		}
	}
	t.Fatal("no spare helper was started after a command")
	return nil
}

func TestSpareHelper(t *testing.T) {
	for name, opts := range map[string]Options{"namespaces": {}, "fallback": {NoNamespaces: true}} {
		t.Run(name, func(t *testing.T) {
			b := New(opts)
			dir := t.TempDir()
			run := func(cmd string) string {
				t.Helper()
				var out bytes.Buffer
				o, err := b.Run(context.Background(), Spec{Command: cmd, Dir: dir, Writable: []string{dir}, Output: &out})
				if err != nil || o.ExitCode != 0 {
					t.Fatalf("%s: %v %+v %q", cmd, err, o, out.String())
				}
				return out.String()
			}
			run("true")
			// The spare takes the next command, output and all.
			h := spareOf(t, b)
			if got := run("echo out; echo err >&2"); got != "out\nerr\n" {
				t.Fatalf("output through the spare = %q", got)
			}
			if !h.dead() {
				t.Fatal("the spare that ran the command is still alive")
			}
			// A spare killed from outside is replaced, not used.
			h = spareOf(t, b)
			h.cmd.Process.Signal(syscall.SIGKILL)
			<-h.exited
			if got := run("echo again"); got != "again\n" {
				t.Fatalf("after the spare died: %q", got)
			}
			// Close stops the spare: no helper is left.
			h = spareOf(t, b)
			b.Close()
			select {
			case <-h.exited:
			case <-time.After(5 * time.Second):
				t.Fatal("the spare outlived Close")
			}
		})
	}
}

// TestCancelledBeforeStartNeverRuns: a command whose call was cancelled
// before a helper took it does not run at all.
func TestCancelledBeforeStartNeverRuns(t *testing.T) {
	b := New(Options{})
	defer b.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o, err := b.Run(ctx, Spec{Command: "touch ran", Dir: dir, Writable: []string{dir}, Output: &bytes.Buffer{}})
	if err != nil || !o.Cancelled {
		t.Fatalf("outcome %+v, err %v: want cancelled", o, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the cancelled command ran")
	}
}
