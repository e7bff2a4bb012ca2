//go:build linux

package box

import (
	"context"
	"testing"
	"time"
)

// BenchmarkWatchedWrites is what the watch of writes costs a command
// that makes and removes 1,000 files of its workspace (two watched calls
// a file), with a Writes that does nothing: the box's side alone, each
// call handed to bridle, its file found and let go on. "echo" is one
// watched call (the command turn's `echo hi > cmd_out.txt`). 100 ms
// apart, as BenchmarkSpawn's after-a-pause.
func BenchmarkWatchedWrites(b *testing.B) {
	dir := b.TempDir()
	bx := New(Options{})
	defer bx.Close()
	for _, c := range []struct{ name, command string }{
		{"echo", "echo hi > cmd_out.txt"},
		{"1000-files", `i=0; while [ $i -lt 1000 ]; do echo x > f$i; i=$((i+1)); done; rm f*`},
	} {
		for _, watched := range []bool{false, true} {
			name := c.name + "/unwatched"
			var w Writes
			if watched {
				name, w = c.name+"/watched", nothing{}
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					time.Sleep(100 * time.Millisecond)
					b.StartTimer()
					o, err := bx.Run(context.Background(), Spec{Command: c.command, Dir: dir, Writable: []string{dir}, Output: discard{},
						MemoryBytes: 1 << 30, Processes: 512, Writes: w})
					if err != nil || o.ExitCode != 0 || o.Unwatched != "" {
						b.Fatal(err, o)
					}
				}
			})
		}
	}
}

type nothing struct{}

func (nothing) Changing(Change) {}
