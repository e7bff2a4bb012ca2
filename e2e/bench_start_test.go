package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/testfs"
)

// firstCallScenario lists the workspace's top, then answers.
const firstCallScenario = `{"turns": [{"calls": [
  {"tool_calls": [{"name": "list_dir", "input": {"path": "."}}]},
  {"text": "Listed."}
]}]}`

// BenchmarkSessionNewLargeTree measures session/new in real-sized
// repositories: Go's source tree (about 11,000 files, committed to git)
// and a generated 100,000-file tree (and, for scale, the usual one-file
// folder). Each iteration starts a fresh bridle whose database is open
// already, so only the session's own start is timed, and times:
//   - its first session/new there (ns/op);
//   - ms-to-first-call: from sending that session/new to the answer of a
//     first prompt whose turn lists the workspace's top (list_dir) and
//     ends: a tool call's output waits for the list of the workspace's
//     .env files, which the session's start no longer builds;
//   - ms-second: a second session/new on the same workspace in the same
//     process, after that turn.
//
// With BRIDLE_BEFORE set to another binary, each tree is measured with it
// first ("before"), then with the binary under test ("now"): one run
// compares them (-count interleaves them).
func BenchmarkSessionNewLargeTree(b *testing.B) {
	bins := []struct{ name, path string }{{"now", acptest.Binary(b)}}
	if p := os.Getenv("BRIDLE_BEFORE"); p != "" {
		bins = append([]struct{ name, path string }{{"before", p}}, bins...)
	}
	trees := []struct {
		name string
		make func(testing.TB) string
	}{
		{"small", func(tb testing.TB) string {
			return acptest.Workspace(tb, map[string]string{"main.go": "package main\n"})
		}},
		{"go", testfs.GoTree},
		{"100k", func(tb testing.TB) string { return testfs.GeneratedTree(tb, 100000, true) }},
	}
	for _, tree := range trees {
		b.Run(tree.name, func(b *testing.B) {
			ws := tree.make(b)
			model := acptest.Scenario(b, firstCallScenario)
			for _, bin := range bins {
				b.Run(bin.name, func(b *testing.B) {
					var toCall, second time.Duration
					db := b.TempDir() + "/b.db"
					for range b.N {
						b.StopTimer()
						a := acptest.Start(b, acptest.Options{Bin: bin.path, DB: db, Model: model})
						a.Initialize()
						// session/list waits for the database, which is
						// opened in the background after initialize.
						a.MustCall("session/list", map[string]any{}, nil)
						start := time.Now()
						b.StartTimer()
						sid := a.NewSession(ws)
						b.StopTimer()
						if stop := a.Prompt(sid, "list the top"); stop != "end_turn" {
							b.Fatalf("the first prompt ended with %q", stop)
						}
						toCall += time.Since(start)
						start = time.Now()
						a.NewSession(ws)
						second += time.Since(start)
						a.CloseStdin()
						a.WaitExit()
						b.StartTimer()
					}
					b.ReportMetric(ms(toCall)/float64(b.N), "ms-to-first-call")
					b.ReportMetric(ms(second)/float64(b.N), "ms-second")
				})
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
