package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/testfs"
)

// commandTurnScenario answers every prompt holding "run" with a turn that
// runs one command, then a line of text.
const commandTurnScenario = `{"turns": [{"match": "run", "calls": [
	{"tool_calls": [{"name": "run_command", "input": {"command": "echo hi > cmd_out.txt"}}]},
	{"text": "done"}]}]}`

// BenchmarkCommandTurn measures, through the binary, a turn that runs
// `echo hi > cmd_out.txt` (prompt → stopReason, scripted model, full-auto)
// in a one-file folder, in Go's source tree committed to git
// (testfs.GoTree, ~11,500 files) and in a generated 100,000-file tree
// (BRIDLE_BENCH_TREES=small,gotree,100k chooses): "first" is the first command of a
// new bridle process (a new session, as an editor opening the project),
// "later" a command of a process that has run one. Besides the time
// (p50, ms) it reports what the bridle process wrote to disk during the
// turn (/proc/PID/io write_bytes, MB; the box's processes write the 3
// bytes of cmd_out.txt) and what its data directory grew by (MB kept).
// With BRIDLE_BEFORE naming another build, every iteration runs that
// build's turn too, right after this one's, and the "-before" figures
// and the ratios are its.
func BenchmarkCommandTurn(b *testing.B) {
	trees := []struct {
		name string
		make func(testing.TB) string
	}{
		{"small", func(tb testing.TB) string { return acptest.Workspace(tb, map[string]string{"a.txt": "a\n"}) }},
		{"gotree", testfs.GoTree},
		{"100k", func(tb testing.TB) string { return testfs.GeneratedTree(tb, 100_000, true) }},
	}
	bins := []struct{ name, path string }{{"", acptest.Binary(b)}}
	if p := os.Getenv("BRIDLE_BEFORE"); p != "" {
		bins = append(bins, struct{ name, path string }{"-before", p})
	}
	for _, tree := range trees {
		if !strings.Contains(os.Getenv("BRIDLE_BENCH_TREES"), tree.name) && os.Getenv("BRIDLE_BENCH_TREES") != "" {
			continue
		}
		ws := tree.make(b)
		model := acptest.Scenario(b, commandTurnScenario)
		b.Run(tree.name+"/first", func(b *testing.B) {
			m := newTurnMeasures(len(bins))
			dbs := make([]string, len(bins))
			for i := range bins {
				dbs[i] = filepath.Join(b.TempDir(), "bridle.db")
			}
			for range b.N {
				for i, bin := range bins {
					a := acptest.Start(b, acptest.Options{Bin: bin.path, DB: dbs[i], Model: model})
					a.Initialize()
					sid := a.NewSession(ws)
					a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
					m.turn(b, i, a, sid, dbs[i])
					a.CloseStdin()
					a.WaitExit()
				}
			}
			m.report(b, bins)
		})
		b.Run(tree.name+"/later", func(b *testing.B) {
			m := newTurnMeasures(len(bins))
			agents := make([]*acptest.Agent, len(bins))
			sids := make([]string, len(bins))
			dbs := make([]string, len(bins))
			for i, bin := range bins {
				dbs[i] = filepath.Join(b.TempDir(), "bridle.db")
				agents[i] = acptest.Start(b, acptest.Options{Bin: bin.path, DB: dbs[i], Model: model})
				agents[i].Initialize()
				sids[i] = agents[i].NewSession(ws)
				agents[i].MustCall("session/set_mode", map[string]any{"sessionId": sids[i], "modeId": "full-auto"}, nil)
				if stop := agents[i].Prompt(sids[i], "run first"); stop != "end_turn" {
					b.Fatalf("first command: %s", stop)
				}
			}
			for range b.N {
				for i := range bins {
					m.turn(b, i, agents[i], sids[i], dbs[i])
				}
			}
			m.report(b, bins)
		})
	}
}

// turnMeasures are the figures of the turns of each build.
type turnMeasures struct {
	ms, written, kept [][]float64
}

func newTurnMeasures(n int) *turnMeasures {
	return &turnMeasures{ms: make([][]float64, n), written: make([][]float64, n), kept: make([][]float64, n)}
}

// turn plays one command turn on a and keeps its figures as build i's.
func (m *turnMeasures) turn(b *testing.B, i int, a *acptest.Agent, sid, db string) {
	pid := a.Cmd.Process.Pid
	w0, k0 := writeBytes(b, pid), dirBytes(filepath.Dir(db))
	start := time.Now()
	if stop := a.Prompt(sid, "run it"); stop != "end_turn" {
		b.Fatalf("the command turn ended %s", stop)
	}
	m.ms[i] = append(m.ms[i], float64(time.Since(start).Microseconds())/1000)
	m.written[i] = append(m.written[i], float64(writeBytes(b, pid)-w0)/1e6)
	m.kept[i] = append(m.kept[i], float64(dirBytes(filepath.Dir(db))-k0)/1e6)
}

func (m *turnMeasures) report(b *testing.B, bins []struct{ name, path string }) {
	for i, bin := range bins {
		b.ReportMetric(median(m.ms[i]), "ms-p50"+bin.name)
		b.ReportMetric(median(m.written[i]), "MB-written"+bin.name)
		b.ReportMetric(median(m.kept[i]), "MB-kept"+bin.name)
	}
	if len(bins) == 2 && median(m.ms[0]) > 0 {
		b.ReportMetric(median(m.ms[1])/median(m.ms[0]), "x-faster")
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// writeBytes is what process pid has caused to be written to storage.
func writeBytes(tb testing.TB, pid int) int64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		tb.Fatalf("read bridle's I/O counters: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	tb.Fatal("no write_bytes in /proc/PID/io")
	return 0
}

// dirBytes is the size of the files below dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
