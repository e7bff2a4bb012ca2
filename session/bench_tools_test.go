package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/tools"
)

// stopwatch is the editor's side of a benchmarked session: it notes when
// the editor hears of a tool call and when of its end. The events' own
// times are stored to the millisecond, too coarse here.
type stopwatch struct {
	recorder
	mu           sync.Mutex
	called, done time.Time
	failed       bool
}

func (w *stopwatch) Update(ctx context.Context, id string, u acp.SessionUpdate) error {
	now := time.Now()
	w.mu.Lock()
	switch {
	case u.ToolCall != nil:
		w.called = now
	case u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil:
		switch *u.ToolCallUpdate.Status {
		case acp.ToolCallStatusCompleted:
			w.done = now
		case acp.ToolCallStatusFailed:
			w.failed = true
		}
	}
	w.mu.Unlock()
	return nil
}

// lap returns the time from the last tool call to its end.
func (w *stopwatch) lap() (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done.Sub(w.called), !w.failed && w.done.After(w.called)
}

// benchSession is a live session in dir with the built-in tools, playing
// sc, whose editor is w.
func benchSession(b *testing.B, sc *scripted.Scenario, dir string, w *stopwatch) *Session {
	b.Helper()
	m, _ := newTestManager(b, sc)
	m.cfg.Tools = tools.DefaultTools()
	m.cfg.Client = w
	// A model's window as the providers' are (the tests' 10k window
	// would cut every read of the file, which a real session does not).
	win, err := contextwin.New(config.Context{}, func(string) config.ModelSpec {
		return config.ModelSpec{Window: 200_000, MaxOutput: 32_000, Tokenizer: "o200k_base"}
	})
	if err != nil {
		b.Fatal(err)
	}
	m.cfg.Window = win
	info, err := m.New(context.Background(), NewParams{Cwd: dir})
	if err != nil {
		b.Fatal(err)
	}
	s, err := m.Get(context.Background(), info.ID)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// goSource2000 is the first 2,000 lines of the vendored go/parser source:
// real code, with the words redaction looks for (key, token, auth).
func goSource2000(b *testing.B) string {
	b.Helper()
	return testfs.GoSource(b, 2000)
}

// toolTimes runs one prompt per iteration through the session, each
// making the model call the tool once and then answer, and reports the
// median time from the editor hearing of the tool call to hearing of its
// end: the tool as the session runs it, with the checks, the plan, the
// redaction and the appends to the SQLite file. The turn's median is
// reported too. before runs ahead of each prompt, untimed.
func toolTimes(b *testing.B, s *Session, w *stopwatch, before func()) {
	b.Helper()
	var calls, turns []time.Duration
	for b.Loop() {
		b.StopTimer()
		before()
		b.StartTimer()
		start := time.Now()
		stop, err := s.Prompt(context.Background(), []event.Content{{Type: "text", Text: "go"}})
		turns = append(turns, time.Since(start))
		if err != nil || stop != StopEndTurn {
			b.Fatalf("prompt: %v %v", stop, err)
		}
		d, ok := w.lap()
		if !ok {
			b.Fatalf("the tool call did not complete: %+v", s.Events()[len(s.Events())-3:])
		}
		calls = append(calls, d)
	}
	b.ReportMetric(p50ms(calls), "call-p50-ms")
	b.ReportMetric(p50ms(turns), "turn-p50-ms")
}

func p50ms(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / float64(time.Millisecond)
}

// BenchmarkReadFileInSession reads a 2,000-line Go file with read_file
// through a live session: the scripted model asks, the session checks,
// runs, redacts and records the call in its SQLite file. "uncached"
// rewrites the file before each prompt so that the tool-output cache
// cannot serve the read; "cached" leaves it, and the cache serves every
// read after the first.
//
// "edited" writes a new first line before each prompt (the same file
// edited, every line after it moved down one), so the output differs
// from every earlier one; "new" ends every line with a comment naming the
// prompt, so no line of the file was read before (its words were).
func BenchmarkReadFileInSession(b *testing.B) {
	src := goSource2000(b)
	for _, name := range []string{"uncached", "cached", "edited", "new"} {
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "parser.go")
			edits := 0
			write := func() {
				text := src
				switch name {
				case "edited":
					edits++
					text = fmt.Sprintf("// edit %d: the first line changed\n%s", edits, src)
				case "new":
					edits++
					text = strings.ReplaceAll(src, "\n", fmt.Sprintf(" // v%d\n", edits))
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			write()
			sc := &scripted.Scenario{Turns: []scripted.Turn{{Match: "go", Calls: []scripted.Call{
				call("read_file", `{"path":"parser.go"}`),
				{Text: scripted.Chunks{"Read."}},
			}}}}
			w := &stopwatch{}
			s := benchSession(b, sc, dir, w)
			toolTimes(b, s, w, func() {
				if name != "cached" {
					write()
				}
			})
		})
	}
}

// BenchmarkEditFileInSession edits one line of a 2,000-line Go file with
// edit_file through a live session (the agent's mode allows edits without
// asking): plan, diff for the editor, redaction, write, result hunk.
func BenchmarkEditFileInSession(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "parser.go")
	src := goSource2000(b)
	const old, repl = "func (p *parser) init(", "func (p *parser) initialize("
	if strings.Count(src, old) != 1 {
		b.Fatalf("%q is not unique in parser.go", old)
	}
	sc := &scripted.Scenario{Turns: []scripted.Turn{{Match: "go", Calls: []scripted.Call{
		call("edit_file", `{"path":"parser.go","old_string":"`+old+`","new_string":"`+repl+`"}`),
		{Text: scripted.Chunks{"Edited."}},
	}}}}
	w := &stopwatch{}
	s := benchSession(b, sc, dir, w)
	toolTimes(b, s, w, func() {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkRunCommandInSession runs `true` with run_command through a
// live session in a workspace holding a copy of this repository's source
// (real files, a few hundred): the box, the recording of what the
// command changes for a rewind (the box's watch where it can, else the
// scans), and the SQLite appends. "no-checkpoints" is the same session
// without a data directory, where commands are not recorded: the
// difference is the recording's cost.
func BenchmarkRunCommandInSession(b *testing.B) {
	src := b.TempDir()
	files := copySource(b, "..", src)
	for _, name := range []string{"checkpoints", "no-checkpoints"} {
		b.Run(name, func(b *testing.B) {
			sc := &scripted.Scenario{Turns: []scripted.Turn{{Match: "go", Calls: []scripted.Call{
				call("run_command", `{"command":"true"}`),
				{Text: scripted.Chunks{"Ran."}},
			}}}}
			w := &stopwatch{}
			s := benchSession(b, sc, src, w)
			if name == "checkpoints" {
				s.m.cfg.DataDir = b.TempDir()
			}
			if err := s.SetMode(context.Background(), string(permission.ModeFullAuto)); err != nil {
				b.Fatal(err)
			}
			toolTimes(b, s, w, func() {})
			b.ReportMetric(float64(files), "files")
		})
	}
}

// copySource copies the .go, .md, .lua and .ts files below from into to,
// keeping their paths; it returns how many.
func copySource(b *testing.B, from, to string) int {
	b.Helper()
	n := 0
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "bin", "dist", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".lua", ".ts":
		default:
			return nil
		}
		rel, _ := filepath.Rel(from, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		n++
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
