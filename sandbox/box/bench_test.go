package box

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
)

// BenchmarkSpawn compares a confined `true` with an unconfined one (its
// own session, like the box, but no namespaces, Landlock or seccomp). The
// goal is at most 10 ms extra per confined command.
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
	for name, opts := range map[string]Options{"confined": {}, "confined-fallback": {NoNamespaces: true}} {
		bx := New(opts)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				o, err := bx.Run(context.Background(), Spec{Command: "true", Dir: dir, Writable: []string{dir}, Output: discard{},
					MemoryBytes: 1 << 30, Processes: 512})
				if err != nil || o.ExitCode != 0 {
					b.Fatal(err, o)
				}
			}
		})
	}
}
