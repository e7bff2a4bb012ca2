package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// TestRecorder: told of each change before it happens, as the box tells
// it, a Recorder keeps what each file held and, once the command is
// done, records what changed; the same files a scan would (not ignored,
// not .git), with no workspace walked.
func TestRecorder(t *testing.T) {
	type step struct {
		change box.Change // paths relative to the workspace
		do     func(ws string)
	}
	write := func(name, body string) func(string) {
		return func(ws string) { testfs.Write(t, filepath.Join(ws, name), body) }
	}
	remove := func(name string) func(string) {
		return func(ws string) { os.Remove(filepath.Join(ws, name)) }
	}
	rename := func(from, to string) func(string) {
		return func(ws string) { os.Rename(filepath.Join(ws, from), filepath.Join(ws, to)) }
	}
	files := map[string]string{"a": "a\n", "b": "b\n", "d/x": "x\n", "d/y.log": "y\n", ".gitignore": "*.log\n", "same": "s\n"}
	for _, c := range []struct {
		name  string
		steps []step
		want  []event.FileChange
		why   string
	}{
		{"create change remove", []step{
			{box.Change{Path: "new"}, write("new", "n")},
			{box.Change{Path: "a"}, write("a", "A\n")},
			{box.Change{Path: "a"}, write("a", "AA\n")},
			{box.Change{Path: "b"}, remove("b")},
		}, []event.FileChange{{Path: "a", Before: hashOf("a\n"), After: hashOf("AA\n"), Mode: 0o644}, {Path: "b", Before: hashOf("b\n"), Mode: 0o644},
			{Path: "new", After: hashOf("n")}}, ""},
		{"opened to write, left as it was", []step{{box.Change{Path: "same"}, write("same", "s\n")}}, nil, ""},
		{"made and removed", []step{{box.Change{Path: "tmp"}, write("tmp", "t")}, {box.Change{Path: "tmp"}, remove("tmp")}}, nil, ""},
		{"ignored", []step{{box.Change{Path: "z.log"}, write("z.log", "z")}, {box.Change{Path: "d/y.log"}, remove("d/y.log")}}, nil, ""},
		{"a file renamed", []step{{box.Change{Path: "a", To: "c"}, rename("a", "c")}},
			[]event.FileChange{{Path: "a", Before: hashOf("a\n"), Mode: 0o644}, {Path: "c", After: hashOf("a\n")}}, ""},
		{"a directory renamed", []step{{box.Change{Path: "d", To: "e"}, rename("d", "e")}},
			[]event.FileChange{{Path: "d/x", Before: hashOf("x\n"), Mode: 0o644}, {Path: "e/x", After: hashOf("x\n")}}, ""},
		{"exchanged", []step{{box.Change{Path: "a", To: "b", Exchange: true}, func(ws string) {
			rename("a", "t")(ws)
			rename("b", "a")(ws)
			rename("t", "b")(ws)
		}}}, []event.FileChange{{Path: "a", Before: hashOf("a\n"), After: hashOf("b\n"), Mode: 0o644}, {Path: "b", Before: hashOf("b\n"), After: hashOf("a\n"), Mode: 0o644}}, ""},
		{".gitignore changed first", []step{
			{box.Change{Path: ".gitignore"}, write(".gitignore", "")},
			{box.Change{Path: "z.log"}, write("z.log", "z")},
		}, []event.FileChange{{Path: ".gitignore", Before: hashOf("*.log\n"), After: hashOf(""), Mode: 0o644}, {Path: "z.log", After: hashOf("z")}}, ""},
		{"a call the box could not follow", []step{{box.Change{Unknown: "/proc/1/fd/3 (a link the box cannot follow)"}, func(string) {}}},
			nil, "bridle could not tell which files some of the command's calls changed: /proc/1/fd/3 (a link the box cannot follow)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			testfs.WriteTree(t, ws, files)
			root, err := confine.OpenRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			s := New(Options{DataDir: t.TempDir(), Session: "s"})
			rec := s.Recorder(root)
			abs := func(p string) string {
				if p == "" {
					return ""
				}
				return filepath.Join(ws, p)
			}
			for _, st := range c.steps {
				ch := st.change
				ch.Path, ch.To = abs(ch.Path), abs(ch.To)
				rec.Changing(t.Context(), ch)
				st.do(ws)
			}
			got, why := rec.Finish(t.Context(), "")
			for i := range got {
				got[i].Path, _ = filepath.Rel(ws, got[i].Path)
			}
			if !slices.Equal(got, c.want) || why != c.why {
				t.Fatalf("changed (why %q):\n got %+v\nwant %+v (why %q)", why, got, c.want, c.why)
			}
			for _, f := range got {
				if f.Before != "" && f.Before != event.NotKept {
					if _, err := s.Get(f.Before); err != nil {
						t.Errorf("%s: what it held before is not kept: %v", f.Path, err)
					}
				}
			}
		})
	}
}

// TestRecorderBounds: a file over MaxFile or the session's bound, or with
// other hard links, is recorded as not kept, with why; a run the box
// could not watch says so.
func TestRecorderBounds(t *testing.T) {
	ws := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{"big": strings.Repeat("x", MaxFile+1), "mid": "more than ten bytes", "h": "h"})
	if err := os.Link(filepath.Join(ws, "h"), filepath.Join(ws, "h2")); err != nil {
		t.Fatal(err)
	}
	root, err := confine.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	rec := New(Options{DataDir: t.TempDir(), Session: "s", Bytes: 10}).Recorder(root)
	for _, name := range []string{"big", "mid", "h"} {
		rec.Changing(t.Context(), box.Change{Path: filepath.Join(ws, name)})
		os.Remove(filepath.Join(ws, name))
	}
	got, why := rec.Finish(t.Context(), "seccomp is off")
	want := []event.FileChange{
		{Path: filepath.Join(ws, "big"), Before: event.NotKept, Mode: 0o644, Why: "larger than 8 MiB"},
		{Path: filepath.Join(ws, "h"), Before: event.NotKept, Mode: 0o644, Why: "it has other hard links"},
		{Path: filepath.Join(ws, "mid"), Before: event.NotKept, Mode: 0o644, Why: "larger than the session's checkpoints may hold (10 bytes)"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("changed:\n got %+v\nwant %+v", got, want)
	}
	if why != "the box could not watch what the command changed: seccomp is off" {
		t.Errorf("why %q", why)
	}
}

// TestRecorderBoundsItsMemory: past the files, or the bytes of paths,
// one command's record may hold, the rest are not recorded and the record
// says so; ignored files are not held at all; of the calls the box could
// not follow, the first few are named, cut short, and the rest counted.
func TestRecorderBoundsItsMemory(t *testing.T) {
	long := strings.Repeat("x", 200)
	// What the box says of a 4 KB path through a link loop, cut to 200
	// bytes: its start and its end.
	shortLoop := "loop/" + strings.Repeat("x", 128) + "…" + strings.Repeat("x", 35) + " (a link the box cannot follow)"
	for _, c := range []struct {
		name       string
		max, paths int
		file       string // a file's name, %d its number
		unknown    int    // calls the box could not follow
		recorded   int
		why        string
	}{
		{"files", 3, MaxCommandPaths, "f%d.go", 0, 3,
			"the command changed more files than one command's record holds (3, or 32 MB of paths); those past them are not recorded"},
		{"bytes of paths", 100, 1000, long + "%d.go", 0, 3,
			"the command changed more files than one command's record holds (100, or 1000 bytes of paths); those past them are not recorded"},
		{"calls not followed", 100, MaxCommandPaths, "", 100_000, 0,
			"bridle could not tell which files some of the command's calls changed: " + shortLoop + "; " + shortLoop + "; " + shortLoop + " and 99997 more"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, ws := recorderOn(t, map[string]string{".gitignore": "*.o\n"}, Options{})
			rec.max, rec.maxPaths = c.max, c.paths
			for i := range 10 {
				if c.file == "" {
					break
				}
				for _, name := range []string{fmt.Sprintf("f%d.o", i), fmt.Sprintf(c.file, i)} {
					p := filepath.Join(ws, name)
					rec.Changing(t.Context(), box.Change{Path: p})
					testfs.Write(t, p, "x")
				}
			}
			for range c.unknown {
				rec.Changing(t.Context(), box.Change{Unknown: "loop/" + strings.Repeat("x", 4000) + " (a link the box cannot follow)"})
			}
			got, why := rec.Finish(t.Context(), "")
			if len(got) != c.recorded || len(rec.files) != c.recorded || why != c.why || len(rec.unknown) > shownUnknown {
				t.Errorf("recorded %d, held %d and %d calls' words, why %q", len(got), len(rec.files), len(rec.unknown), why)
			}
		})
	}
}

// TestRecorderStops: what one command's record reads is bounded by what
// the session's checkpoints hold, and once the command is stopped (ctx)
// nothing more is read; the files not kept say why, and so does the
// record.
func TestRecorderStops(t *testing.T) {
	body := strings.Repeat("x", 40)
	files := map[string]string{"d/1": body, "d/2": body, "d/3": body, "d/4": body, "e": body}
	stopped := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	for _, c := range []struct {
		name    string
		ctx     context.Context
		changes []box.Change
		kept    int    // of the files before
		notKept string // why the others were not
		why     string
	}{
		{"past what the checkpoints hold", t.Context(), []box.Change{{Path: "d", To: "f"}, {Path: "e"}}, 2,
			"the command changed more than this session's checkpoints hold (100 bytes)",
			"bridle did not read 4 files after the command (the command changed more than this session's checkpoints hold (100 bytes)), so a rewind asks before putting them back; " +
				"the command changed more than this session's checkpoints hold (100 bytes): what 3 files held before is not kept"},
		{"a file, stopped", stopped(), []box.Change{{Path: "e"}}, 0, "the command was stopped (its timeout, or a cancel) before bridle kept it", ""},
		{"a directory renamed, stopped", stopped(), []box.Change{{Path: "d", To: "f"}}, 0, "",
			"bridle could not tell which files some of the command's calls changed: d (a directory renamed: the command was stopped before bridle had read it)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, ws := recorderOn(t, files, Options{Bytes: 100})
			for _, ch := range c.changes {
				ch.Path = filepath.Join(ws, ch.Path)
				if ch.To != "" {
					ch.To = filepath.Join(ws, ch.To)
				}
				rec.Changing(c.ctx, ch)
				if ch.To != "" {
					os.Rename(ch.Path, ch.To)
				} else {
					testfs.Write(t, ch.Path, "changed")
				}
			}
			got, why := rec.Finish(t.Context(), "")
			kept, whys := 0, map[string]bool{}
			for _, ch := range got {
				switch {
				case ch.Before == event.NotKept:
					whys[ch.Why] = true
				case ch.Before != "":
					kept++
				}
			}
			if kept != c.kept || len(whys) > 1 || c.notKept != "" && !whys[c.notKept] || strings.ReplaceAll(why, ws+"/", "") != c.why {
				t.Errorf("kept %d before, want %d; why %q; the files' whys %v", kept, c.kept, why, whys)
			}
		})
	}
}

// TestRecorderFinishStops: once the turn is cancelled, Finish reads
// nothing more: a file the command changed is recorded as changed to
// what bridle does not know, and the record says why.
func TestRecorderFinishStops(t *testing.T) {
	rec, ws := recorderOn(t, map[string]string{"a": "a\n", "b": "b\n"}, Options{})
	for _, name := range []string{"a", "b", "new"} {
		p := filepath.Join(ws, name)
		rec.Changing(t.Context(), box.Change{Path: p})
		testfs.Write(t, p, "changed\n")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got, why := rec.Finish(ctx, "")
	want := []event.FileChange{{Path: "a", Before: hashOf("a\n"), After: event.NotKept, Mode: 0o644},
		{Path: "b", Before: hashOf("b\n"), After: event.NotKept, Mode: 0o644}, {Path: "new", After: event.NotKept}}
	for i := range got {
		got[i].Path = strings.TrimPrefix(got[i].Path, ws+"/")
	}
	if !slices.Equal(got, want) || why != "bridle did not read 3 files after the command (the turn was cancelled before bridle had read them), so a rewind asks before putting them back" {
		t.Errorf("recorded %+v, why %q", got, why)
	}
}

// recorderOn is a recorder of a workspace holding files, which it
// returns, keeping among checkpoints with o (in a temp data directory).
func recorderOn(t *testing.T, files map[string]string, o Options) (*Recorder, string) {
	t.Helper()
	ws := t.TempDir()
	testfs.WriteTree(t, ws, files)
	root, err := confine.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	o.DataDir, o.Session = t.TempDir(), "s"
	return New(o).Recorder(root), ws
}
