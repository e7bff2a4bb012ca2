package checkpoint

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/tools"
)

// scanRig is a workspace holding files and the scanner of it, keeping
// checkpoints in a data directory of its own.
func scanRig(t *testing.T, files map[string]string, o Options, limit ScanOptions) (*Scanner, string) {
	t.Helper()
	ws := t.TempDir()
	testfs.WriteTree(t, ws, files)
	root, err := confine.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	o.DataDir, o.Session = t.TempDir(), "s"
	sn := New(o).Scanner(root, limit)
	t.Cleanup(sn.Close)
	return sn, ws
}

// scanned runs command in ws between the scans and returns what it
// changed, paths relative to ws, and why it was not scanned.
func scanned(t *testing.T, sn *Scanner, ws, command string) ([]event.FileChange, string) {
	t.Helper()
	sc := sn.Before(context.Background())
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	changes, why := sn.After(context.Background(), sc)
	for i := range changes {
		changes[i].Path, _ = filepath.Rel(ws, changes[i].Path)
	}
	return changes, why
}

// TestScanFindsWhatACommandChanged: the scans around a command find what
// it created, changed and deleted, keep what those files held before,
// and leave alone what they must not follow or cannot keep.
func TestScanFindsWhatACommandChanged(t *testing.T) {
	big := strings.Repeat("x", MaxFile+1)
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
		name:    "ignored files and .git are not the snapshot's",
		files:   map[string]string{".gitignore": "*.log\nout/\n", "old.log": "old\n", ".git/HEAD": "ref\n"},
		command: "printf x > y.log && rm old.log && mkdir -p out && printf x > out/z && printf y > .git/HEAD",
	}, {
		name:    "links and pipes are not followed",
		command: "ln -s /etc/passwd link && mkfifo pipe && ln -s . loop",
	}, {
		name:    "a touch is no change",
		files:   map[string]string{"t": "same\n"},
		command: "touch t",
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
		want: []event.FileChange{{Path: "h", Before: event.NotKept, After: event.NotKept, Mode: 0o644, Why: "it has other hard links"},
			{Path: "h2", Before: event.NotKept, After: event.NotKept, Mode: 0o644, Why: "it has other hard links"}},
	}, {
		name:    "a file .gitignore stops hiding is not created by the command",
		files:   map[string]string{".gitignore": "secret.env\n", "secret.env": "KEY=1\n"},
		setup:   func(t *testing.T, ws string) { agedPast(t, filepath.Join(ws, "secret.env"), ClockSlack) },
		command: "printf '' > .gitignore",
		want:    []event.FileChange{{Path: ".gitignore", Before: hashOf("secret.env\n"), After: hashOf(""), Mode: 0o644}},
	}, {
		name:    "a file .gitignore stops hiding and the command writes is not removable",
		files:   map[string]string{".gitignore": "notes.txt\n", "notes.txt": "MINE\n"},
		setup:   func(t *testing.T, ws string) { agedPast(t, filepath.Join(ws, "notes.txt"), ClockSlack) },
		command: "printf '' > .gitignore && printf 'x\\n' >> notes.txt",
		want: []event.FileChange{{Path: ".gitignore", Before: hashOf("notes.txt\n"), After: hashOf(""), Mode: 0o644},
			{Path: "notes.txt", Before: event.NotKept, After: hashOf("MINE\nx\n"), Why: "it was not among the files scanned before the command (ignored then, or of unknown birth)"}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sn, ws := scanRig(t, c.files, Options{}, ScanOptions{})
			if c.setup != nil {
				c.setup(t, ws)
			}
			got, why := scanned(t, sn, ws, c.command)
			if why != "" || !slices.Equal(got, c.want) {
				t.Fatalf("changed (unscanned %q):\n got %+v\nwant %+v", why, got, c.want)
			}
			for _, f := range got {
				if f.Before == "" || f.Before == event.NotKept {
					continue
				}
				if data, err := sn.store.Get(f.Before); err != nil || tools.Hash(data) != f.Before {
					t.Errorf("%s: what it held before is not among the checkpoints: %v", f.Path, err)
				}
			}
		})
	}
}

// TestScanSnapshotIsACache: later scans see only what changed since the
// last; the snapshot holds one copy per content and goes when the
// scanner closes; the checkpoints stay.
func TestScanSnapshotIsACache(t *testing.T) {
	sn, ws := scanRig(t, map[string]string{"a": "same\n", "b": "same\n", "c": "other\n"}, Options{}, ScanOptions{})
	if got, _ := scanned(t, sn, ws, "printf new > a"); len(got) != 1 || got[0].Path != "a" {
		t.Fatalf("first command: %+v", got)
	}
	// The user changes b between the commands: not the second command's.
	testfs.Write(t, filepath.Join(ws, "b"), "user\n")
	if got, _ := scanned(t, sn, ws, "rm c"); len(got) != 1 || got[0].Path != "c" || got[0].Before != hashOf("other\n") {
		t.Fatalf("second command: %+v", got)
	}
	entries, err := os.ReadDir(sn.dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	want := []string{strings.TrimPrefix(hashOf("new"), "sha256:"), strings.TrimPrefix(hashOf("user\n"), "sha256:")}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("the snapshot holds %v, want a copy of each file's present content %v", names, want)
	}
	sn.Close()
	if _, err := os.Stat(sn.dir()); !os.IsNotExist(err) {
		t.Errorf("the snapshot outlives the scanner: %v", err)
	}
	if _, err := sn.store.Get(hashOf("other\n")); err != nil {
		t.Errorf("the checkpoint of the deleted file went with the snapshot: %v", err)
	}
}

// TestScanBounds: a workspace past a scan's bound (files, directories)
// is not scanned, and from then on the scanner scans no more, even once
// the workspace is small again: the bound is paid once. The user is told
// once, and nothing is copied.
func TestScanBounds(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		extra []string // what takes the workspace past the bound
		limit ScanOptions
		why   string
	}{
		{"files", map[string]string{"1": "", "2": "", "3": "", "4": "", "5": ""}, []string{"3", "4", "5"},
			ScanOptions{Files: 3}, "more than 3 files outside .gitignore"},
		{"directories", map[string]string{"1": "", "2": "", "d1/a": "", "d2/a": "", "d3/a": "", "d4/a": ""}, []string{"d1", "d2", "d3", "d4"},
			ScanOptions{Dirs: 3}, "more than 3 directories outside .gitignore"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var told notices
			sn, ws := scanRig(t, c.files, Options{Notice: told.add}, c.limit)
			for n, command := range []string{"rm 1", "rm 2"} {
				got, why := scanned(t, sn, ws, command)
				if got != nil {
					t.Fatalf("command %d: recorded %+v past the bound", n+1, got)
				}
				if !strings.Contains(why, c.why) {
					t.Errorf("command %d: not scanned because %q, want %q", n+1, why, c.why)
				}
				// Small again: a scanner that scanned again would see the
				// next command.
				for _, p := range c.extra {
					if err := os.RemoveAll(filepath.Join(ws, p)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if entries, _ := os.ReadDir(sn.dir()); len(entries) != 0 {
				t.Errorf("past the bound the scan still copied %d files", len(entries))
			}
			if n := told.count("not checkpointed for the rest of this session"); n != 1 || told.count(c.why) != 1 {
				t.Errorf("told %d times that commands are not checkpointed (%q), want once", n, told.texts)
			}
		})
	}
}

// TestScanSnapshotFull: past the session's bound a file is not even
// read, and a command that deletes it is recorded as not kept.
func TestScanSnapshotFull(t *testing.T) {
	sn, ws := scanRig(t, map[string]string{"small": "s", "large": "more than ten bytes"}, Options{Bytes: 10}, ScanOptions{})
	got, _ := scanned(t, sn, ws, "rm small large")
	want := []event.FileChange{{Path: "large", Before: event.NotKept, Mode: 0o644, Why: "the session's snapshot is full (10 bytes)"}, {Path: "small", Before: hashOf("s"), Mode: 0o644}}
	if !slices.Equal(got, want) {
		t.Fatalf("changed:\n got %+v\nwant %+v", got, want)
	}
}

// TestCommandThatOutgrowsTheBound: a command that takes the workspace
// past the scan's bound still has what it did to the files known before
// recorded, found path by path.
func TestCommandThatOutgrowsTheBound(t *testing.T) {
	sn, ws := scanRig(t, map[string]string{"a": "a\n", "b": "b\n", "c": "c\n"}, Options{}, ScanOptions{Files: 4})
	got, why := scanned(t, sn, ws, "printf 'A\\n' > a && rm b && touch f1 f2 f3 f4 f5")
	want := []event.FileChange{{Path: "a", Before: hashOf("a\n"), After: hashOf("A\n"), Mode: 0o644}, {Path: "b", Before: hashOf("b\n"), Mode: 0o644}}
	if !slices.Equal(got, want) || !strings.Contains(why, "more than 4 files") {
		t.Fatalf("changed (unscanned %q):\n got %+v\nwant %+v", why, got, want)
	}
	for _, f := range got {
		if _, err := sn.store.Get(f.Before); err != nil {
			t.Errorf("%s: what it held before is not among the checkpoints: %v", f.Path, err)
		}
	}
}

// agedPast returns once the clock is past the file's change time by more
// than d: a file that old was there before a scan that starts now.
func agedPast(t *testing.T, path string, d time.Duration) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Written once, so changed when it was modified.
	time.Sleep(time.Until(fi.ModTime().Add(2 * d)))
}

// BenchmarkMicroScan is one scan of a generated workspace, every file's
// stamp unchanged since the last scan (the common case: a command ran,
// few files moved): the walk, a stat per file, the .gitignore rules.
// Micro: no session, no box.
func BenchmarkMicroScan(b *testing.B) {
	for _, files := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			ws := testfs.GeneratedTree(b, files, false)
			root, err := confine.OpenRoot(ws)
			if err != nil {
				b.Fatal(err)
			}
			defer root.Close()
			sn := New(Options{DataDir: b.TempDir(), Session: "s"}).Scanner(root, ScanOptions{})
			defer sn.Close()
			ctx := context.Background()
			sn.After(ctx, sn.Before(ctx))
			for b.Loop() {
				sn.After(ctx, sn.Before(ctx))
			}
			b.ReportMetric(float64(files), "files")
		})
	}
}
