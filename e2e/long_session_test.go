package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// longRecipe is a long session made through the binary: prompts, each
// answered by calls model calls (read_file of one of the workspace's
// files, then a last answer), in a model window of window tokens that
// the session outgrows many times over, so its history is compacted
// again and again.
type longRecipe struct {
	name                   string
	prompts, calls, window int
	// files are the workspace's files the calls read in turn, each of
	// lines lines.
	files, lines int
	// think is how many times each call says a sentence of notes (the
	// history the window can only compact, where outputs can drop).
	think int
}

// outputs is at least what the session's reads put in its log, in bytes
// (its lines are 50 to 60 bytes long).
func (r longRecipe) outputs() int { return (r.prompts - 1) * (r.calls - 1) * r.lines * 50 }

// longLog is a long session kept on disk: its database, id, workspace,
// and the model it is pinned to.
type longLog struct {
	db, id, ws, model string
}

// session100k is the benchmarks' long session: ~100,000 events (500
// prompts of 50 model calls, 49 of them reads of a 20-line file, a 138 MB
// database), in a 200k-token window compacted 12 times.
var session100k = longRecipe{name: "session-100k-v1", prompts: 500, calls: 50, window: 200_000, files: 50, lines: 20}

// longSession returns the recipe's session, built once through the binary
// under test and kept under the temp directory (building the 100,000
// events takes minutes): each use gets a copy of the database.
func longSession(tb testing.TB, r longRecipe) longLog {
	tb.Helper()
	dir := filepath.Join(os.TempDir(), "bridle-e2e-"+r.name)
	if id, err := os.ReadFile(filepath.Join(dir, "id")); err == nil {
		l := longIn(dir)
		l.id = string(id)
		return l
	}
	os.RemoveAll(dir)
	return buildLong(tb, dir, r)
}

func longIn(dir string) longLog {
	return longLog{db: filepath.Join(dir, "bridle.db"), ws: filepath.Join(dir, "ws"), model: "scripted/" + filepath.Join(dir, "scenario.json")}
}

// buildLong makes the recipe's session in dir through the binary under
// test.
func buildLong(tb testing.TB, dir string, r longRecipe) longLog {
	tb.Helper()
	l := longIn(dir)
	for i := range r.files {
		var b strings.Builder
		for j := range r.lines {
			fmt.Fprintf(&b, "func part%d_%d() int { return compute(%d, %q) }\n", i, j, (i*31+j)*7919%1000, "status=ok")
		}
		p := filepath.Join(l.ws, "src", fmt.Sprintf("f%02d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	// Played in order whatever the requests hold.
	read := func(n int) map[string]any {
		return map[string]any{"text": fmt.Sprintf("Reading part %d.", n) + strings.Repeat(" Noting what the last part said about the parser.", r.think),
			"tool_calls": []any{map[string]any{"name": "read_file", "input": map[string]string{"path": fmt.Sprintf("src/f%02d.go", n%r.files)}}}}
	}
	calls := []any{read(0), map[string]any{"text": "Read it."}}
	for p := 1; p < r.prompts; p++ {
		for c := range r.calls - 1 {
			calls = append(calls, read(p*r.calls+c))
		}
		calls = append(calls, map[string]any{"text": fmt.Sprintf("Done with prompt %d.", p)})
	}
	sc, err := json.Marshal(map[string]any{"sequential": true, "turns": []any{map[string]any{"calls": calls}},
		"model": map[string]any{"window": r.window, "max_output": 4_000, "tokenizer": "o200k_base"}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.json"), sc, 0o600); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	a := acptest.Start(tb, acptest.Options{DB: l.db, Model: l.model, Unchecked: true})
	a.Initialize()
	l.id = a.NewSession(l.ws)
	for p := range r.prompts {
		if stop := a.Prompt(l.id, fmt.Sprintf("Read the next part (%d).", p)); stop != "end_turn" {
			tb.Fatalf("building %s: prompt %d stopped with %s", r.name, p, stop)
		}
	}
	a.CloseStdin()
	a.WaitExit()
	tb.Logf("built %s (%d prompts) in %v", r.name, r.prompts, time.Since(start).Round(time.Second))
	// A bridle started on the database plays the scenario from its first
	// call again: from now on it is a short turn, one read and an answer
	// (a model that holds the whole script would weigh in the figures).
	next, err := json.Marshal(map[string]any{"sequential": true, "turns": []any{map[string]any{"calls": calls[:2]}},
		"model": map[string]any{"window": r.window, "max_output": 4_000, "tokenizer": "o200k_base"}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.json"), next, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "id"), []byte(l.id), 0o600); err != nil {
		tb.Fatal(err)
	}
	return l
}

// copyDB copies the session's database (and its WAL, if any) for one use.
func (l longLog) copyDB(tb testing.TB) string {
	tb.Helper()
	to := filepath.Join(tb.TempDir(), "bridle.db")
	for _, suffix := range []string{"", "-wal"} {
		in, err := os.Open(l.db + suffix)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		out, err := os.Create(to + suffix)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			tb.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return to
}

// open starts bridle on a copy of the session's database.
func (l longLog) open(tb testing.TB) *acptest.Agent {
	tb.Helper()
	a := acptest.Start(tb, acptest.Options{DB: l.copyDB(tb), Model: l.model, Unchecked: true})
	a.Initialize()
	return a
}

func (l longLog) params() map[string]any {
	return map[string]any{"sessionId": l.id, "cwd": l.ws, "mcpServers": []any{}}
}

// BenchmarkLongSession opens the ~100,000-event session (session100k;
// built once, which takes minutes) in a fresh bridle, twice: once with
// session/resume (the log read into a live session, ms-resume) and once
// with session/load (the same, then the whole history replayed to the
// editor: ms-load, until the answer, which comes after every update),
// then prompts it (a turn of two model calls). It reports bridle's
// resident memory (MB-rss) after the resume, after the load and after the
// turn, its private part (MB-private-turn) and its peak (MB-peak).
//
// The session's database may be of an older schema (it is built once and
// kept): a copy is opened first by the binary under test, which migrates
// it (ms-first-open, the process's whole run of `bridle sessions`), and
// the timed opens read copies of that copy.
func BenchmarkLongSession(b *testing.B) {
	l := longSession(b, session100k)
	l.db = l.copyDB(b)
	start := time.Now()
	if out, err := exec.Command(acptest.Binary(b), "sessions", "--db", l.db).CombinedOutput(); err != nil {
		b.Fatalf("bridle sessions on the session's database: %v\n%s", err, out)
	}
	b.ReportMetric(millis(time.Since(start)), "ms-first-open")
	var resume, load time.Duration
	var rssResume, rssLoad, rssTurn, private, peak int64
	for range b.N {
		a := l.open(b)
		start := time.Now()
		if _, err := a.Call("session/resume", l.params()); err != nil {
			b.Fatalf("session/resume: %v", err)
		}
		resume += time.Since(start)
		rssResume += procStatus(b, a.Cmd.Process.Pid, "VmRSS")
		a.CloseStdin()
		a.WaitExit()

		a = l.open(b)
		start = time.Now()
		if _, err := a.Call("session/load", l.params()); err != nil {
			b.Fatalf("session/load: %v", err)
		}
		load += time.Since(start)
		rssLoad += procStatus(b, a.Cmd.Process.Pid, "VmRSS")
		if stop := a.Prompt(l.id, "One more part."); stop != "end_turn" {
			b.Fatalf("a prompt after the load stopped with %s", stop)
		}
		rssTurn += procStatus(b, a.Cmd.Process.Pid, "VmRSS")
		private += procStatus(b, a.Cmd.Process.Pid, "RssAnon")
		peak = max(peak, peakRSS(b, a.Cmd.Process.Pid))
		a.CloseStdin()
		a.WaitExit()
	}
	n := float64(b.N)
	b.ReportMetric(millis(resume)/n, "ms-resume")
	b.ReportMetric(millis(load)/n, "ms-load")
	b.ReportMetric(float64(rssResume)/n/(1<<20), "MB-rss-resume")
	b.ReportMetric(float64(rssLoad)/n/(1<<20), "MB-rss-load")
	b.ReportMetric(float64(rssTurn)/n/(1<<20), "MB-rss-turn")
	b.ReportMetric(float64(private)/n/(1<<20), "MB-private-turn")
	b.ReportMetric(float64(peak)/(1<<20), "MB-peak")
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// longOutputs is a session whose log holds ~30 MB of file reads (588 of
// ~55 KB) and long notes, in a 100k-token window it fills every two or
// three prompts: its last compaction leaves most reads before it.
var longOutputs = longRecipe{name: "outputs", prompts: 13, calls: 50, window: 100_000, files: 10, lines: 1_000, think: 60}

// A session is held by its window, not by its whole log: a bridle that
// opens a long session from the database does not hold the outputs the
// window no longer shows (before, every event of the log was decoded and
// kept: its resident memory grew by more than all of them), and the
// session still replays whole, and goes on.
func TestALongSessionIsHeldByItsWindow(t *testing.T) {
	l := buildLong(t, t.TempDir(), longOutputs)
	a := l.open(t)
	pid := a.Cmd.Process.Pid
	// A small session first, and a turn in it: the tokenizer and what a
	// turn needs are made, so that what follows is the long session's.
	small := a.NewSession(l.ws)
	if stop := a.Prompt(small, "A first look."); stop != "end_turn" {
		t.Fatalf("a prompt in a small session stopped with %s", stop)
	}
	before := procStatus(t, pid, "RssAnon")
	if _, err := a.Call("session/resume", l.params()); err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	grew := procStatus(t, pid, "RssAnon") - before
	t.Logf("opening the session of %d MB of outputs grew bridle's private memory by %d MB (from %d MB)", longOutputs.outputs()>>20, grew>>20, before>>20)
	if limit := int64(longOutputs.outputs() / 2); grew > limit {
		t.Errorf("opening a session whose log holds %d MB of outputs, most of them before its window, grew bridle's private memory by %d MB: the log is held whole (want under %d MB)",
			longOutputs.outputs()>>20, grew>>20, limit>>20)
	}
	a.CloseStdin()
	a.WaitExit()

	// Loaded by a fresh bridle, the whole history is replayed: every read
	// has its card and its result.
	a = l.open(t)
	if _, err := a.Call("session/load", l.params()); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	cards, results := 0, 0
	for _, u := range a.Updates(l.id) {
		switch {
		case u.Kind == "tool_call":
			cards++
		case u.Kind == "tool_call_update" && u.Fields["status"] == "completed":
			results++
		}
	}
	reads := 1 + (longOutputs.prompts-1)*(longOutputs.calls-1)
	if cards < reads || results != reads {
		t.Errorf("the replay shows %d cards and %d results, want %d reads and their compactions", cards, results, reads)
	}
	t.Logf("session/load: peak resident memory %d MB", peakRSS(t, a.Cmd.Process.Pid)>>20)
	if stop := a.Prompt(l.id, "One more part."); stop != "end_turn" {
		t.Fatalf("a prompt after the load stopped with %s", stop)
	}
}
