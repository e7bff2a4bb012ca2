package session

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// loopModel is a model that asks for a read (the stamp tool, or what call
// names) until its budget of calls is spent, then answers. It notes when
// each request reaches it, so a benchmark can time the harness between a
// tool's end and the next request.
type loopModel struct {
	mu    sync.Mutex
	left  int
	n     int
	sent  []time.Time
	stamp *stamp
	// call, when set, is the tool and input of the n-th request's call.
	call func(n int) (tool, input string)
}

func (m *loopModel) Name() string { return "loop" }

func (m *loopModel) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	if len(req.System) > 0 && strings.HasPrefix(req.System[0].Text, contextwin.SummaryMarker) {
		return summaryStream
	}
	m.mu.Lock()
	m.sent = append(m.sent, time.Now())
	m.n++
	call := m.left > 0
	if call {
		m.left--
	}
	n := m.n
	m.mu.Unlock()
	return func(yield func(provider.Delta, error) bool) {
		usage := provider.Delta{Kind: provider.DeltaUsage, Usage: provider.Usage{InputTokens: 100, OutputTokens: 20}}
		if !call {
			for _, d := range []provider.Delta{{Kind: provider.DeltaText, Text: "Done."}, usage, {Kind: provider.DeltaStop, StopReason: provider.StopEndTurn}} {
				if !yield(d, nil) {
					return
				}
			}
			return
		}
		tool, input := "stamp", fmt.Sprintf(`{"part":%d}`, n)
		if m.call != nil {
			tool, input = m.call(n)
		}
		for _, d := range []provider.Delta{
			{Kind: provider.DeltaText, Text: "Reading the next part."},
			{Kind: provider.DeltaToolStart, Index: 0, ToolCallID: fmt.Sprintf("call_%d", n), ToolName: tool},
			{Kind: provider.DeltaToolArgs, Index: 0, Text: input},
			{Kind: provider.DeltaToolEnd, Index: 0},
			usage,
			{Kind: provider.DeltaStop, StopReason: provider.StopToolUse},
		} {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// summaryStream answers a compaction's summary request.
func summaryStream(yield func(provider.Delta, error) bool) {
	for _, d := range []provider.Delta{
		{Kind: provider.DeltaText, Text: `{"goal":"read the project","done":["read its parts"],"summary":"the parts were read in order"}`},
		{Kind: provider.DeltaUsage, Usage: provider.Usage{InputTokens: 1000, OutputTokens: 30}},
		{Kind: provider.DeltaStop, StopReason: provider.StopEndTurn},
	} {
		if !yield(d, nil) {
			return
		}
	}
}

// stamp is a read tool that returns a few lines of a file and notes when
// it returned.
type stamp struct {
	mu   sync.Mutex
	done []time.Time
}

func (*stamp) Name() string        { return "stamp" }
func (*stamp) Description() string { return "Read a part of the project." }
func (*stamp) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"part":{"type":"integer"}}}`)
}
func (*stamp) Kind() tools.Kind          { return tools.KindRead }
func (*stamp) Effect() permission.Effect { return permission.EffectRead }
func (*stamp) Preview(context.Context, *tools.Env, json.RawMessage) (tools.Preview, error) {
	return tools.Preview{Title: "stamp"}, nil
}
func (s *stamp) Run(_ context.Context, _ *tools.Env, input json.RawMessage) tools.Result {
	var in struct{ Part int }
	json.Unmarshal(input, &in)
	out := fmt.Sprintf("func part%d() {\n\treturn compute(%d, \"status=ok\")\n}\n", in.Part, in.Part*7919%1000)
	s.mu.Lock()
	s.done = append(s.done, time.Now())
	s.mu.Unlock()
	return tools.Result{Output: out}
}

// loopRig is a Manager on a database on disk (synchronous=FULL) with the
// loop model, the stamp tool and a window that never compacts (or the
// loop's).
type loopRig struct {
	m     *Manager
	st    *store.Store
	model *loopModel
	tool  *stamp
}

// A loop is what a fixture's session is made of: the stamp loop, or
// reads of the workspace's files (readLoop).
type loop struct {
	name string
	// setup writes the workspace's files; rig adapts the rig.
	setup func(tb testing.TB, cwd string)
	rig   func(r *loopRig)
	// window is the model's window in tokens; 0: one no session fills
	// (50M tokens), so nothing is ever compacted.
	window int
}

var stampLoop = loop{name: "loop"}

// compactingLoop is the stamp loop with a model's real window (200k
// tokens): its history is compacted every ~14,000 events, and a long
// session's window holds a part of its log.
var compactingLoop = loop{name: "compacting", window: 200_000}

func openRig(tb testing.TB, dbPath string) *loopRig { return openLoop(tb, dbPath, stampLoop) }

func openLoop(tb testing.TB, dbPath string, l loop) *loopRig {
	tb.Helper()
	st, err := store.Open(context.Background(), dbPath)
	if err != nil {
		tb.Fatal(err)
	}
	window := cmp.Or(l.window, 50_000_000)
	win, err := contextwin.New(config.Context{}, func(string) config.ModelSpec {
		return config.ModelSpec{Window: window, MaxOutput: 1_000, Tokenizer: "o200k_base"}
	})
	if err != nil {
		tb.Fatal(err)
	}
	tool := &stamp{}
	model := &loopModel{stamp: tool}
	m := NewManager(Config{
		Store: st, Client: &recorder{}, DefaultModel: func(string) string { return "loop/test" },
		Tools: []tools.Tool{tool}, Window: win, MaxIterations: 1 << 30,
		OpenModel: func(context.Context, string, string) (provider.Provider, error) { return model, nil },
	})
	r := &loopRig{m: m, st: st, model: model, tool: tool}
	if l.rig != nil {
		l.rig(r)
	}
	return r
}

func (r *loopRig) close() {
	r.m.Shutdown()
	r.st.Close()
}

// turn runs one prompt in which the model asks for calls reads.
func (r *loopRig) turn(tb testing.TB, s *Session, calls int) {
	tb.Helper()
	r.model.mu.Lock()
	r.model.left = calls
	r.model.mu.Unlock()
	if stop, err := s.Prompt(context.Background(), []event.Content{{Type: "text", Text: "Read the project."}}); err != nil || stop != StopEndTurn {
		tb.Fatalf("prompt: %s, %v", stop, err)
	}
}

// gaps returns, for each tool call since from, the time from the tool's
// return to the next request reaching the model.
func (r *loopRig) gaps(from int) []time.Duration {
	r.tool.mu.Lock()
	done := slices.Clone(r.tool.done[from:])
	r.tool.mu.Unlock()
	r.model.mu.Lock()
	sent := slices.Clone(r.model.sent)
	r.model.mu.Unlock()
	var out []time.Duration
	for _, d := range done {
		i, _ := slices.BinarySearchFunc(sent, d, func(a, b time.Time) int { return a.Compare(b) })
		if i < len(sent) {
			out = append(out, sent[i].Sub(d))
		}
	}
	return out
}

// fixture returns a copy of a database holding one session of at least
// events events, built through the real loop (prompts of 100 reads each),
// and the session's id. Built databases are kept in the temp directory,
// keyed by the test binary, since the large ones take minutes to build.
func fixture(tb testing.TB, events int) (dbPath, id string) { return fixtureOf(tb, stampLoop, events) }

// fixtureOf is fixture for a session made by loop l.
func fixtureOf(tb testing.TB, l loop, events int) (dbPath, id string) {
	tb.Helper()
	dir := filepath.Join(os.TempDir(), "bridle-bench-"+binaryHash(tb))
	cwd := filepath.Join(dir, "ws")
	if l.name != stampLoop.name {
		cwd += "-" + l.name
	}
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		tb.Fatal(err)
	}
	built := filepath.Join(dir, fmt.Sprintf("%s-%d.db", l.name, events))
	idFile := built + ".id"
	if _, err := os.Stat(idFile); err != nil {
		os.Remove(built)
		if l.setup != nil {
			l.setup(tb, cwd)
		}
		r := openLoop(tb, built, l)
		ctx := context.Background()
		info, err := r.m.New(ctx, NewParams{Cwd: cwd})
		if err != nil {
			tb.Fatal(err)
		}
		s, err := r.m.Get(ctx, info.ID)
		if err != nil {
			tb.Fatal(err)
		}
		for len(s.Events()) < events {
			r.turn(tb, s, min(100, (events-len(s.Events()))/4+1))
		}
		r.close()
		if err := os.WriteFile(idFile, []byte(info.ID), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	b, err := os.ReadFile(idFile)
	if err != nil {
		tb.Fatal(err)
	}
	dbPath = filepath.Join(tb.TempDir(), "bridle.db")
	for _, suffix := range []string{"", "-wal"} {
		copyFile(tb, built+suffix, dbPath+suffix)
	}
	return dbPath, string(b)
}

func copyFile(tb testing.TB, from, to string) {
	tb.Helper()
	in, err := os.Open(from)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}

func binaryHash(tb testing.TB) string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkToolLoopGap times the harness between a tool's return and the
// next model request, through the real turn loop: the result is cut,
// recorded (SQLite on disk, synchronous=FULL), the request assembled from
// the log and context_assembled recorded. Sessions of 1k and 10k events
// are built through the same loop. The session is reloaded from its
// fixture every 25 calls, so its size stays near the name's.
func BenchmarkToolLoopGap(b *testing.B) {
	for _, size := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("events=%d", size), func(b *testing.B) {
			var all []time.Duration
			for done := 0; done < b.N; {
				b.StopTimer()
				db, id := fixture(b, size)
				r := openRig(b, db)
				s, err := r.m.Get(context.Background(), id)
				if err != nil {
					b.Fatal(err)
				}
				n := min(25, b.N-done)
				b.StartTimer()
				r.turn(b, s, n)
				b.StopTimer()
				all = append(all, r.gaps(0)...)
				r.close()
				done += n
			}
			b.ReportMetric(ms(percentile(all, 0.5)), "ms-p50")
			b.ReportMetric(ms(percentile(all, 0.9)), "ms-p90")
		})
	}
}

// BenchmarkSessionAppend measures one event recorded the way the turn
// loop records it (Session.append): encoded, its tokens counted, then
// committed alone (one fsync).
func BenchmarkSessionAppend(b *testing.B) {
	db, id := fixture(b, 1_000)
	r := openRig(b, db)
	defer r.close()
	s, err := r.m.Get(context.Background(), id)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.append(ctx, event.FileChanged{Path: fmt.Sprintf("src/part%d.go", i), Shown: "src/part.go"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScale builds sessions of 1k, 10k and (with
// BRIDLE_BENCH_100K=1, since building it takes minutes the first time)
// 100k events through the real loop, with a window no session fills
// (nothing is compacted: the window is the whole log), then measures at
// each size: the tool loop's gap (p50 and p90 over the calls timed), one
// assembly after a tool iteration (p50 of 25), loading the session from
// the database, and the process's RSS once it is loaded and after the
// turn. It prints them as a table at the end.
func BenchmarkScale(b *testing.B) { benchScale(b, stampLoop) }

// BenchmarkScaleCompacting is BenchmarkScale with a model's real window
// (200k tokens): the history is compacted as it grows, and the session
// holds what came before its window's start as stubs.
func BenchmarkScaleCompacting(b *testing.B) { benchScale(b, compactingLoop) }

func benchScale(b *testing.B, l loop) {
	sizes := []int{1_000, 10_000}
	if os.Getenv("BRIDLE_BENCH_100K") == "1" {
		sizes = append(sizes, 100_000)
	}
	var table []string
	for _, size := range sizes {
		var row string
		b.Run(fmt.Sprintf("events=%d", size), func(b *testing.B) {
			b.StopTimer()
			ctx := context.Background()
			db, id := fixtureOf(b, l, size)
			r := openLoop(b, db, l)
			defer r.close()
			runtime.GC()
			start := time.Now()
			s, err := r.m.Get(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			load := time.Since(start)
			runtime.GC()
			rss := vmRSS(b)
			// An assembly as the loop makes it: after a tool iteration
			// (the model's call and its result) is in the log.
			t := &turn{s: s, reg: s.registry()}
			w := s.m.window(s.Info().Cwd)
			if _, err := w.Assemble(t.input()); err != nil { // the memo reads the log once
				b.Fatal(err)
			}
			var asm []time.Duration
			for i := range 25 {
				id := fmt.Sprintf("scale_%d", i)
				if _, err := s.append(ctx,
					event.AssistantMessage{Text: "Reading.", ToolCalls: []event.ToolCall{{ID: id, Name: "stamp", Input: json.RawMessage(`{"part":1}`)}}},
					event.ToolResult{CallID: id, Name: "stamp", Status: "completed", Output: "func part1() {}\n"}); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				a, err := w.Assemble(t.input())
				asm = append(asm, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.append(ctx, a.Occupancy); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			r.turn(b, s, b.N)
			b.StopTimer()
			runtime.GC()
			turnRSS := vmRSS(b)
			gaps := r.gaps(0)
			p50, p90 := percentile(gaps, 0.5), percentile(gaps, 0.9)
			b.ReportMetric(ms(p50), "ms-gap-p50")
			b.ReportMetric(ms(p90), "ms-gap-p90")
			b.ReportMetric(ms(percentile(asm, 0.5)), "ms-assemble")
			b.ReportMetric(ms(load), "ms-load")
			b.ReportMetric(float64(rss)/(1<<20), "MB-rss")
			b.ReportMetric(float64(turnRSS)/(1<<20), "MB-rss-turn")
			row = fmt.Sprintf("| %d | %.2f | %.2f | %.2f | %.1f | %.0f | %.0f |", size, ms(p50), ms(p90), ms(percentile(asm, 0.5)), ms(load), float64(rss)/(1<<20), float64(turnRSS)/(1<<20))
		})
		table = append(table, row)
	}
	// Printed, not logged: a parent benchmark's log is not shown.
	fmt.Println("\n| events | gap p50 ms | gap p90 ms | assembly ms | load ms | RSS MB | RSS after the turn MB |\n| --- | --- | --- | --- | --- | --- | --- |\n" + strings.Join(table, "\n"))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// vmRSS is the process's resident set, from /proc/self/status.
func vmRSS(tb testing.TB) int64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}
