package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
)

// settingsHooks is the settings' hooks as internal/app gives a session
// (a config.Loader over real files: the user's settings.json with
// settings, a repository with an AGENTS.md, the workspace three
// directories down in it), counting how often they are read. Each read
// checks every file the settings come from: here 11 stats.
func settingsHooks(tb testing.TB, settings string) (hooks func(string) []config.Hook, ws string, reads *atomic.Int64) {
	tb.Helper()
	home, repo := tb.TempDir(), tb.TempDir()
	ws = filepath.Join(repo, "a", "b", "c")
	for _, d := range []string{filepath.Join(home, ".config", "bridle"), filepath.Join(repo, ".git"), ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for path, text := range map[string]string{
		filepath.Join(home, ".config", "bridle", "settings.json"): settings,
		filepath.Join(repo, "AGENTS.md"):                          "Run the tests.\n",
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	l := &config.Loader{Getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}}
	reads = &atomic.Int64{}
	return func(cwd string) []config.Hook {
		reads.Add(1)
		c := l.For(cwd)
		if c.Err != nil {
			tb.Errorf("the settings: %v", c.Err)
		}
		return c.Settings.Hooks
	}, ws, reads
}

// TestHooksReadOncePerTurn: a turn reads the settings' hooks once,
// however many tool calls it makes (before: at each hook point, two per
// call, and at the prompt and the turn's end), with no hooks configured,
// with hooks for other tools only, and with a hook for every call (which
// still runs for each: here it fails, this test's session having no
// sandbox, and is recorded).
func TestHooksReadOncePerTurn(t *testing.T) {
	tests := []struct {
		name     string
		settings string
		runs     int // hook_ran events of the two turns
	}{
		{"no hooks", `{}`, 0},
		{"hooks of other tools", `{"hooks": {"PreToolUse": [{"matcher": "run_command", "command": "true"}], "PostToolUse": [{"matcher": "edit_file", "command": "true"}]}}`, 0},
		{"a hook for every call", `{"hooks": {"PreToolUse": [{"matcher": "dump", "command": "true"}]}}`, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := func(n int) []scripted.Call {
				var cs []scripted.Call
				for range n {
					cs = append(cs, call("dump", `{"lines": 1}`))
				}
				return append(cs, scripted.Call{Text: scripted.Chunks{"done"}})
			}
			sc := &scripted.Scenario{Turns: []scripted.Turn{{Match: "five", Calls: calls(5)}, {Match: "two", Calls: calls(2)}}}
			m, _ := newTestManager(t, sc)
			hooks, ws, reads := settingsHooks(t, tt.settings)
			m.cfg.Hooks = hooks
			s := openSession(t, m, ws, "")
			for i, text := range []string{"five", "two"} {
				if stop, err := prompt(t, s, text); err != nil || stop != StopEndTurn {
					t.Fatalf("prompt %q: %v %v", text, stop, err)
				}
				if got := reads.Load(); got != int64(i+1) {
					t.Errorf("after %d turns the hooks were read %d times, want once a turn", i+1, got)
				}
			}
			var runs []string
			for _, e := range s.Events() {
				if h, ok := e.Payload.(event.HookRan); ok {
					runs = append(runs, h.Verdict+": "+h.Reason)
				}
			}
			if len(runs) != tt.runs {
				t.Errorf("%d hooks ran, want %d: %s", len(runs), tt.runs, strings.Join(runs, "; "))
			}
		})
	}
}

// BenchmarkHookPointsInSession is a turn of ten tool calls (the test
// tool, which does next to nothing) through a live session whose
// settings, as the binary's, are read from files: the user's settings
// with no hooks, a repository with an AGENTS.md, the workspace three
// directories down. "no-settings" is the same turn with no settings to
// read (Config.Hooks nil): the difference is what the hook points cost a
// turn that has no hooks. settings-reads/turn counts Config.Hooks calls.
func BenchmarkHookPointsInSession(b *testing.B) {
	for _, name := range []string{"settings", "no-settings"} {
		b.Run(name, func(b *testing.B) {
			var cs []scripted.Call
			for range 10 {
				cs = append(cs, call("dump", `{"lines": 1}`))
			}
			sc := &scripted.Scenario{Turns: []scripted.Turn{{Match: "go", Calls: append(cs, scripted.Call{Text: scripted.Chunks{"done"}})}}}
			m, _ := newTestManager(b, sc)
			hooks, ws, reads := settingsHooks(b, `{"models": {}}`)
			if name == "settings" {
				m.cfg.Hooks = hooks
			}
			s := openSession(b, m, ws, "")
			var turns []time.Duration
			for b.Loop() {
				start := time.Now()
				stop, err := s.Prompt(context.Background(), []event.Content{{Type: "text", Text: "go"}})
				turns = append(turns, time.Since(start))
				if err != nil || stop != StopEndTurn {
					b.Fatalf("prompt: %v %v", stop, err)
				}
			}
			b.ReportMetric(p50ms(turns), "turn-p50-ms")
			b.ReportMetric(float64(reads.Load())/float64(len(turns)), "settings-reads/turn")
		})
	}
}

// BenchmarkMicroHookPoints (micro: the two hook points of one tool call,
// PreToolUse and PostToolUse, in a turn of many calls, with no hooks
// configured; no model, no tool, no commit) is what each tool call paid
// before the hooks were read once a turn: a read of the settings (11
// stats here) at each point.
func BenchmarkMicroHookPoints(b *testing.B) {
	m, _ := newTestManager(b, &scripted.Scenario{})
	hooks, ws, reads := settingsHooks(b, `{"models": {}}`)
	m.cfg.Hooks = hooks
	s := openSession(b, m, ws, "")
	t := &turn{s: s}
	c := provider.ToolCall{ID: "toolu_1", Name: "dump", Input: json.RawMessage(`{"lines": 1}`)}
	key := s.row.ID + "/1/0"
	b.ReportAllocs()
	for b.Loop() {
		if denied, err := t.preToolHooks(context.Background(), key, c); err != nil || denied {
			b.Fatalf("PreToolUse: %v %v", denied, err)
		}
		r := event.ToolResult{CallID: c.ID, Name: c.Name, Status: "completed", Output: "row 0\n"}
		if err := t.postToolHooks(context.Background(), key, &r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(reads.Load())/float64(b.N), "settings-reads/call")
}

// TestPromptHooksWithNoHooks: with no hook for a prompt to run (none
// configured, or hooks of tool calls only), a prompt reads only the log
// since the last prompt, and still passes on what a Stop hook said when
// the turn before ended (the settings lost it since); what hooks said
// before the last prompt reached the model already.
func TestPromptHooksWithNoHooks(t *testing.T) {
	for _, settings := range []string{`{}`, `{"hooks": {"PreToolUse": [{"matcher": "run_command", "command": "true"}]}}`} {
		t.Run(settings, func(t *testing.T) {
			sc := &scripted.Scenario{Turns: []scripted.Turn{{Calls: []scripted.Call{{Text: scripted.Chunks{"done"}}}}}}
			m, _ := newTestManager(t, sc)
			hooks, ws, _ := settingsHooks(t, settings)
			m.cfg.Hooks = hooks
			s := openSession(t, m, ws, "")
			said := func(what string) {
				if _, err := s.commit(context.Background(), nil, event.HookRan{Key: s.row.ID + "/" + what, Event: config.HookStop, Verdict: "context", Context: what}); err != nil {
					t.Fatal(err)
				}
			}
			said("before the first prompt")
			if stop, err := prompt(t, s, "one"); err != nil || stop != StopEndTurn {
				t.Fatalf("prompt: %v %v", stop, err)
			}
			said("at the end of turn one")
			added, refused, err := (&turn{s: s}).promptHooks(context.Background(), []event.Content{{Type: "text", Text: "two"}})
			if err != nil || refused != nil || len(added) != 1 || added[0] != "at the end of turn one" {
				t.Errorf("promptHooks: added %q, refused %q, err %v; want only what was said at the end of turn one", added, refused, err)
			}
		})
	}
}
