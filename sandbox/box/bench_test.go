//go:build unix

package box

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSpawn compares a confined `true` with an unconfined one (its
// own session, like the box, but no namespaces, Landlock or seccomp). The
// goal is at most 10 ms extra per confined command.
//
// The box starts its next helper while a command runs. "after-a-pause"
// waits 100 ms (untimed) between commands, as the model's answer does
// between an agent's tool calls, so the spare is ready; "back-to-back"
// does not, and pays for the helper's start whenever the spare is not
// ready yet.
func BenchmarkSpawn(b *testing.B) {
	dir := b.TempDir()
	b.Run("unconfined", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("/bin/sh", "-c", "true")
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name  string
		opts  Options
		pause bool
	}{
		{"confined/after-a-pause", Options{}, true},
		{"confined/back-to-back", Options{}, false},
		{"confined-fallback/after-a-pause", Options{NoNamespaces: true}, true},
		{"confined-fallback/back-to-back", Options{NoNamespaces: true}, false},
	} {
		bx := New(c.opts)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if c.pause {
					b.StopTimer()
					time.Sleep(100 * time.Millisecond)
					b.StartTimer()
				}
				o, err := bx.Run(context.Background(), Spec{Command: "true", Dir: dir, Writable: []string{dir}, Output: discard{},
					MemoryBytes: 1 << 30, Processes: 512})
				if err != nil || o.ExitCode != 0 {
					b.Fatal(err, o)
				}
			}
		})
		bx.Close()
	}
}
