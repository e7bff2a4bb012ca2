package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/session/checkpoint"
	"github.com/bridle-dev/bridle/tools"
)

// commandRig is a full-auto session in a workspace holding files, with
// the built-in tools (run_command in the real box) and a data directory;
// prompt "P1" runs commands[0], "P2" commands[1], and so on.
func commandRig(t *testing.T, files map[string]string, commands []string, tweak func(*Config)) (*Manager, *Session, *recorder, string) {
	t.Helper()
	sc := &scripted.Scenario{}
	for i, c := range commands {
		in, _ := json.Marshal(map[string]string{"command": c})
		sc.Turns = append(sc.Turns, scripted.Turn{Match: fmt.Sprintf("P%d", i+1), Calls: []scripted.Call{
			toolCall("run_command", string(in)), {Text: scripted.Chunks{"ran"}}}})
	}
	return scenarioRig(t, files, sc, tweak)
}

// scenarioRig is commandRig playing sc.
func scenarioRig(t *testing.T, files map[string]string, sc *scripted.Scenario, tweak func(*Config)) (*Manager, *Session, *recorder, string) {
	t.Helper()
	rec := &recorder{}
	cfg := Config{Client: rec, Tools: tools.DefaultTools()}
	if tweak != nil {
		tweak(&cfg)
	}
	m := dataManager(t, scripted.New(sc), cfg)
	ws := t.TempDir()
	for name, body := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := openSession(t, m, ws, string(permission.ModeFullAuto))
	return m, s, rec, ws
}

// commandChanges runs prompt Pn and returns what its command changed,
// paths relative to ws, hashes shortened to what the test needs.
func commandChanges(t *testing.T, s *Session, ws string, n int) []event.FileChange {
	t.Helper()
	if stop, err := prompt(t, s, fmt.Sprintf("P%d", n)); err != nil || stop != StopEndTurn {
		t.Fatalf("P%d: stop %s, err %v", n, stop, err)
	}
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		if r, ok := events[i].Payload.(event.ToolResult); ok {
			if r.Status != "completed" {
				t.Fatalf("the command did not complete: %s %s", r.Status, r.Output)
			}
			out := slices.Clone(r.Changed)
			for i := range out {
				out[i].Path, _ = filepath.Rel(ws, out[i].Path)
			}
			return out
		}
	}
	t.Fatal("no tool result")
	return nil
}

func hashOf(s string) string { return tools.Hash([]byte(s)) }

// TestCommandSnapshotBounds: where commands are recorded by scans, a
// workspace past a scan's bound (files, directories) is not scanned, and from then on the session scans no
// more, even once the workspace is small again: the bound is paid once
// (package checkpoint's TestScanBounds has the details). The user is told
// once; each command records why it was not scanned, and a rewind over
// them says what it cannot put back.
func TestCommandSnapshotBounds(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		extra []string // what takes the workspace past the bound
		tweak func(*Config)
		why   string
	}{
		{"files", map[string]string{"1": "", "2": "", "3": "", "4": "", "5": ""}, []string{"3", "4", "5"},
			func(c *Config) { c.SnapshotFiles = 3 }, "more than 3 files outside .gitignore"},
		{"directories", map[string]string{"1": "", "2": "", "d1/a": "", "d2/a": "", "d3/a": "", "d4/a": ""}, []string{"d1", "d2", "d3", "d4"},
			func(c *Config) { c.SnapshotDirs = 3 }, "more than 3 directories outside .gitignore"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, s, rec, ws := commandRig(t, c.files, []string{"rm 1", "rm 2"}, func(cfg *Config) { scanned(cfg); c.tweak(cfg) })
			s.Ready(context.Background())
			for n := 1; n <= 2; n++ {
				if got := commandChanges(t, s, ws, n); got != nil {
					t.Fatalf("command %d: recorded %+v past the bound", n, got)
				}
				if r := lastResult(t, s); !strings.Contains(r.Unscanned, c.why) {
					t.Errorf("command %d records why it was not scanned as %q, want %q", n, r.Unscanned, c.why)
				}
				// Small again: a session that scanned again would see the
				// next command.
				for _, p := range c.extra {
					if err := os.RemoveAll(filepath.Join(ws, p)); err != nil {
						t.Fatal(err)
					}
				}
			}
			told := 0
			rec.mu.Lock()
			for _, u := range rec.updates {
				if text := TextOf(u.AgentMessageChunk); strings.Contains(text, "not checkpointed for the rest of this session") && strings.Contains(text, c.why) {
					told++
				}
			}
			rec.mu.Unlock()
			if told != 1 {
				t.Errorf("told %d times that commands are not checkpointed, want once", told)
			}
			plan, err := s.RewindPlan(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if want := "what 2 commands changed since then (not checkpointed: the workspace is too large to scan around each command: " + c.why + ")"; !slices.Contains(plan.Kept, want) {
				t.Errorf("the rewind's plan keeps %q, want it to say %q", plan.Kept, want)
			}
		})
	}
}

// scanned makes a session's commands recorded by scans, as where the box
// cannot watch them (sandbox.command.checkpoint "scan").
func scanned(c *Config) {
	c.Tools = tools.NewTools(config.Sandbox{Command: config.CommandSettings{Checkpoint: "scan"}}, box.New(box.Options{}))
}

// lastResult is the log's last tool result.
func lastResult(t *testing.T, s *Session) event.ToolResult {
	t.Helper()
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		if r, ok := events[i].Payload.(event.ToolResult); ok {
			return r
		}
	}
	t.Fatal("no tool result")
	return event.ToolResult{}
}

// TestRewindPutsBackWhatASubagentDid: a subagent's edits and commands are
// its parent's task call's changes, and a rewind of the parent puts them
// back.
func TestRewindPutsBackWhatASubagentDid(t *testing.T) {
	sc := &scripted.Scenario{Turns: []scripted.Turn{
		{Match: "P1", Calls: []scripted.Call{
			toolCall("task", `{"description":"work","prompt":"CHILD","tools":["edit_file","run_command"]}`),
			{Text: scripted.Chunks{"parent done"}}}},
		{Match: "CHILD", Calls: []scripted.Call{
			toolCall("edit_file", `{"path":"a","old_string":"a","new_string":"A"}`),
			toolCall("run_command", `{"command":"rm b && printf c > c"}`),
			{Text: scripted.Chunks{"child done"}}}},
	}}
	_, s, _, ws := scenarioRig(t, map[string]string{"a": "a\n", "b": "b\n"}, sc, nil)
	got := commandChanges(t, s, ws, 1)
	want := []event.FileChange{{Path: "a", Before: hashOf("a\n"), After: hashOf("A\n"), Mode: 0o644}, {Path: "b", Before: hashOf("b\n"), Mode: 0o644}, {Path: "c", After: hashOf("c")}}
	if !slices.Equal(got, want) {
		t.Fatalf("the task call changed:\n got %+v\nwant %+v", got, want)
	}
	if stop, err := prompt(t, s, "/rewind 1"); err != nil || stop != StopEndTurn {
		t.Fatalf("/rewind 1: %s %v", stop, err)
	}
	if readFile(t, ws, "a") != "a\n" || readFile(t, ws, "b") != "b\n" || readFile(t, ws, "c") != "<none>" {
		t.Errorf("after /rewind 1: a %q, b %q, c %q", readFile(t, ws, "a"), readFile(t, ws, "b"), readFile(t, ws, "c"))
	}
}

// TestCommandSnapshotFull: where commands are recorded by scans, past
// the session's bound a file is not even read, and a command that deletes it is recorded as not kept.
func TestCommandSnapshotFull(t *testing.T) {
	_, s, _, ws := commandRig(t, map[string]string{"small": "s", "large": "more than ten bytes"},
		[]string{"rm small large"}, func(c *Config) { scanned(c); c.CheckpointBytes = 10 })
	got := commandChanges(t, s, ws, 1)
	want := []event.FileChange{{Path: "large", Before: event.NotKept, Mode: 0o644, Why: "the session's snapshot is full (10 bytes)"}, {Path: "small", Before: hashOf("s"), Mode: 0o644}}
	if !slices.Equal(got, want) {
		t.Fatalf("changed:\n got %+v\nwant %+v", got, want)
	}
	plan, err := s.RewindPlan(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Restore) != 1 || len(plan.Kept) != 1 || !strings.Contains(plan.Kept[0], "large (a command changed it and what it held before was not kept: the session's snapshot is full (10 bytes))") {
		t.Fatalf("the rewind's plan: %+v", plan)
	}
}

// TestDeleteRemovesTheSessionsFiles: a deleted session's checkpoints
// (files' exact content) and artifacts go with it.
func TestDeleteRemovesTheSessionsFiles(t *testing.T) {
	m, s, _, ws := commandRig(t, map[string]string{"a": "secret\n"}, []string{"rm a"}, nil)
	if got := commandChanges(t, s, ws, 1); len(got) != 1 {
		t.Fatalf("changed %+v", got)
	}
	dirs := []string{checkpoint.Dir(m.cfg.DataDir, s.ID()), filepath.Join(m.cfg.DataDir, "artifacts", s.ID())}
	if _, err := os.Stat(dirs[0]); err != nil {
		t.Fatalf("no checkpoints before the delete: %v", err)
	}
	if err := m.Delete(context.Background(), s.ID()); err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s outlives its session (%v)", dir, err)
		}
	}
}

// TestRewindUndoKeepsModes: a script a command made executable, removed
// by a rewind, comes back executable when the rewind is undone; a file
// the command deleted comes back with its own mode.
func TestRewindUndoKeepsModes(t *testing.T) {
	_, s, _, ws := commandRig(t, map[string]string{"private": "p\n"},
		[]string{"printf 'echo hi' > run.sh && chmod 755 run.sh && rm private"}, func(*Config) {})
	if err := os.Chmod(filepath.Join(ws, "private"), 0o600); err != nil {
		t.Fatal(err)
	}
	commandChanges(t, s, ws, 1)
	mode := func(name string) os.FileMode {
		fi, err := os.Stat(filepath.Join(ws, name))
		if err != nil {
			return 0
		}
		return fi.Mode().Perm()
	}
	for _, step := range []struct {
		cmd            string
		runSh, private os.FileMode
	}{{"/rewind 1", 0, 0o600}, {"/rewind undo", 0o755, 0}} {
		if stop, err := prompt(t, s, step.cmd); err != nil || stop != StopEndTurn {
			t.Fatalf("%s: %s %v", step.cmd, stop, err)
		}
		if mode("run.sh") != step.runSh || mode("private") != step.private {
			t.Errorf("after %s: run.sh %v, private %v; want %v and %v", step.cmd, mode("run.sh"), mode("private"), step.runSh, step.private)
		}
	}
}

// TestCommandChangesAreWatched: where the box can watch, a command's
// changes are recorded as the box tells them, with what each file held
// before kept among the checkpoints: the files a walk finds (not .git,
// nothing ignored, no links or pipes), a directory renamed in place, and
// no bound on the workspace: past the scans' bounds nothing is skipped.
func TestCommandChangesAreWatched(t *testing.T) {
	for _, tool := range tools.DefaultTools() {
		if w, ok := tool.(tools.WritesWatcher); ok {
			if err := w.WatchesWrites(); err != nil {
				t.Fatalf("this machine's box cannot watch what commands write: %v", err)
			}
		}
	}
	big := strings.Repeat("x", checkpoint.MaxFile+1)
	cases := []struct {
		name    string
		files   map[string]string
		setup   func(t *testing.T, ws string)
		command string
		want    []event.FileChange
	}{{
		name:  "created changed deleted binary",
		files: map[string]string{"a": "a\n", "b": "b\n", "bin": "\x00\xff", "sub/keep": "k\n"},
		setup: func(t *testing.T, ws string) {
			if err := os.Chmod(filepath.Join(ws, "a"), 0o750); err != nil {
				t.Fatal(err)
			}
		},
		command: "rm a && printf 'B\\n' > b && mkdir -p new && printf 'c' > new/c && printf '\\001' > bin",
		want: []event.FileChange{{Path: "a", Before: hashOf("a\n"), Mode: 0o750}, {Path: "b", Before: hashOf("b\n"), After: hashOf("B\n"), Mode: 0o644},
			{Path: "bin", Before: hashOf("\x00\xff"), After: hashOf("\x01"), Mode: 0o644}, {Path: "new/c", After: hashOf("c")}},
	}, {
		name:    "ignored files and .git are not recorded",
		files:   map[string]string{".gitignore": "*.log\nout/\n", "old.log": "old\n", ".git/HEAD": "ref\n"},
		command: "printf x > y.log && rm old.log && mkdir -p out && printf x > out/z && printf y > .git/HEAD",
	}, {
		name:    "links and pipes are not followed",
		command: "ln -s /etc/passwd link && mkfifo pipe && ln -s . loop",
	}, {
		name:    "a touch is no change",
		files:   map[string]string{"t": "same\n"},
		command: "touch t && cat t > /dev/null",
	}, {
		name:    "too large to keep",
		files:   map[string]string{"big": big},
		command: "printf y >> big",
		want:    []event.FileChange{{Path: "big", Before: event.NotKept, After: event.NotKept, Mode: 0o644, Why: "larger than 8 MiB"}},
	}, {
		name:  "hard-linked files are not read",
		files: map[string]string{"h": "h\n"},
		setup: func(t *testing.T, ws string) {
			if err := os.Link(filepath.Join(ws, "h"), filepath.Join(ws, "h2")); err != nil {
				t.Fatal(err)
			}
		},
		command: "printf more >> h",
		want:    []event.FileChange{{Path: "h", Before: event.NotKept, After: event.NotKept, Mode: 0o644, Why: "it has other hard links"}},
	}, {
		name:    "a file .gitignore stops hiding is not the command's",
		files:   map[string]string{".gitignore": "secret.env\n", "secret.env": "KEY=1\n"},
		command: "printf '' > .gitignore",
		want:    []event.FileChange{{Path: ".gitignore", Before: hashOf("secret.env\n"), After: hashOf(""), Mode: 0o644}},
	}, {
		name:    "a file .gitignore stops hiding and the command writes is kept",
		files:   map[string]string{".gitignore": "notes.txt\n", "notes.txt": "MINE\n"},
		command: "printf '' > .gitignore && printf 'x\\n' >> notes.txt",
		want: []event.FileChange{{Path: ".gitignore", Before: hashOf("notes.txt\n"), After: hashOf(""), Mode: 0o644},
			{Path: "notes.txt", Before: hashOf("MINE\n"), After: hashOf("MINE\nx\n"), Mode: 0o644}},
	}, {
		name:    "a directory renamed",
		files:   map[string]string{"d/one": "1\n", "d/sub/two": "2\n", "d/skip.log": "s\n", ".gitignore": "*.log\n"},
		command: "mv d e && printf 3 > e/one",
		want: []event.FileChange{{Path: "d/one", Before: hashOf("1\n"), Mode: 0o644}, {Path: "d/sub/two", Before: hashOf("2\n"), Mode: 0o644},
			{Path: "e/one", After: hashOf("3")}, {Path: "e/sub/two", After: hashOf("2\n")}},
	}, {
		name:    "past the scans' bounds",
		files:   map[string]string{"1": "1", "2": "2", "3": "3", "4": "4", "d1/a": "", "d2/a": "", "d3/a": ""},
		command: "rm 1 && printf x > 2",
		want:    []event.FileChange{{Path: "1", Before: hashOf("1"), Mode: 0o644}, {Path: "2", Before: hashOf("2"), After: hashOf("x"), Mode: 0o644}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, s, _, ws := commandRig(t, c.files, []string{c.command}, func(cfg *Config) { cfg.SnapshotFiles, cfg.SnapshotDirs = 3, 2 })
			if c.setup != nil {
				c.setup(t, ws)
			}
			got := commandChanges(t, s, ws, 1)
			if r := lastResult(t, s); r.Unscanned != "" {
				t.Errorf("not all recorded: %s", r.Unscanned)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("changed:\n got %+v\nwant %+v", got, c.want)
			}
			for _, f := range got {
				if f.Before == "" || f.Before == event.NotKept {
					continue
				}
				if data, err := s.checkpoints().Get(f.Before); err != nil || tools.Hash(data) != f.Before {
					t.Errorf("%s: what it held before is not among the checkpoints: %v", f.Path, err)
				}
			}
			if _, err := os.Stat(filepath.Join(checkpoint.Dir(s.m.cfg.DataDir, s.ID()), "snapshot")); !os.IsNotExist(err) {
				t.Errorf("a watched session made a snapshot of the workspace (%v)", err)
			}
		})
	}
}
