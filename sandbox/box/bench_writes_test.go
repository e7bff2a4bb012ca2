//go:build linux

package box

import (
	"cmp"
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkWatchedWrites is what the watch of writes costs a command,
// the box's side alone (a Writes that does nothing): each watched call
// handed to bridle, its file found and let go on. "echo" is the command
// turn's `echo hi > cmd_out.txt` (one watched call); "1000-files" makes
// and removes 1,000 files (2,000). Each iteration runs the command
// unwatched then watched, 100 ms apart (as BenchmarkSpawn's
// after-a-pause), so a loaded machine weighs on both alike; the figures
// are medians, and us-a-call is their difference over the watched calls.
func BenchmarkWatchedWrites(b *testing.B) {
	dir := b.TempDir()
	bx := New(Options{})
	defer bx.Close()
	for _, c := range []struct{ name, command string }{
		{"echo", "echo hi > cmd_out.txt"},
		{"1000-files", `seq 1000 | sed 's/^/f/' | xargs touch && rm f*`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var unwatched, watched []time.Duration
			var calls counter
			for b.Loop() {
				for _, w := range []Writes{nil, &calls} {
					b.StopTimer()
					time.Sleep(100 * time.Millisecond)
					b.StartTimer()
					start := time.Now()
					o, err := bx.Run(context.Background(), Spec{Command: c.command, Dir: dir, Writable: []string{dir}, Output: discard{},
						MemoryBytes: 1 << 30, Processes: 512, Writes: w})
					if err != nil || o.ExitCode != 0 || o.Unwatched != "" {
						b.Fatal(err, o)
					}
					if w == nil {
						unwatched = append(unwatched, time.Since(start))
					} else {
						watched = append(watched, time.Since(start))
					}
				}
			}
			u, w := median(unwatched), median(watched)
			b.ReportMetric(float64(u.Microseconds())/1000, "ms-unwatched")
			b.ReportMetric(float64(w.Microseconds())/1000, "ms-watched")
			perRun := float64(calls.n.Load()) / float64(len(watched))
			b.ReportMetric(float64((w-u).Microseconds())/perRun, "us-a-call")
		})
	}
}

// counter is a Writes that counts what it is told.
type counter struct{ n atomic.Int64 }

func (c *counter) Changing(context.Context, Change) { c.n.Add(1) }

func median[T cmp.Ordered](d []T) T {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
