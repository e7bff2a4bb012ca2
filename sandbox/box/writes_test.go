//go:build linux

package box

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// told keeps what a box told its Writes.
type told struct {
	mu      sync.Mutex
	changes []Change
}

func (t *told) Changing(_ context.Context, c Change) {
	t.mu.Lock()
	t.changes = append(t.changes, c)
	t.mu.Unlock()
}

// TestWatchedWrites: before a command changes a file of its workspace,
// the box says which, however the command names it (relative, through
// .., through a link in the box's own temp dir, through its own /proc
// descriptors), and only then does the change happen; reads, the box's
// temp dir, /dev/null and hidden paths are not the workspace's changes.
// A directory renamed in place works as it does outside the box.
func TestWatchedWrites(t *testing.T) {
	b := New(Options{})
	if err := b.WatchesWrites(); err != nil {
		t.Fatalf("this machine's box cannot watch writes: %v", err)
	}
	for _, c := range []struct {
		name, command string
		want          []Change // paths relative to the workspace
		check         func(t *testing.T, ws string)
	}{
		{"create", "echo hi > new", []Change{{Path: "new"}}, nil},
		{"append", "echo x >> a", []Change{{Path: "a"}}, nil},
		{"remove", "rm a", []Change{{Path: "a"}}, nil},
		{"rename", "mv a b", []Change{{Path: "a", To: "b"}}, nil},
		{"rename a directory", `python3 -c 'import os; os.rename("d", "e")' && cat e/f`, []Change{{Path: "d", To: "e"}},
			func(t *testing.T, ws string) {
				if _, err := os.Stat(filepath.Join(ws, "e", "f")); err != nil {
					t.Errorf("the directory was not renamed: %v", err)
				}
			}},
		{"reads and elsewhere", `cat a > /dev/null; echo t > "$TMPDIR/t"; cat a >/dev/null 2>&1; ls > /dev/null`, nil, nil},
		{"relative and dot-dot", "cd d && echo x > ../up && echo y > ./down", []Change{{Path: "up"}, {Path: "d/down"}}, nil},
		{"link in the temp dir", `ln -s "$PWD/a" "$TMPDIR/l" && echo x > "$TMPDIR/l"`, []Change{{Path: "a"}}, nil},
		{"own descriptors", "exec 3>>a; echo x > /proc/self/fd/3; echo y > /dev/fd/3", []Change{{Path: "a"}, {Path: "a"}, {Path: "a"}}, nil},
		{"dangling link made", "ln -s target dangling && echo x > dangling", []Change{{Path: "target"}}, nil},
		{"hard link and truncate", "ln a h && truncate -s 0 a", []Change{{Path: "h"}, {Path: "a"}}, nil},
		{"hidden", "echo x > secret/f; echo y > secret/g", nil, nil},
		{"remove a directory", "rm -r d", []Change{{Path: "d/f"}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			testfs.WriteTree(t, ws, map[string]string{"a": "a\n", "d/f": "f\n", "secret/s": "s\n"})
			var w told
			o, out := run(t, b, ws, c.command, func(s *Spec) {
				s.Writes = &w
				s.Hidden = []string{filepath.Join(ws, "secret")}
			})
			if o.Unwatched != "" {
				t.Fatalf("not watched: %s", o.Unwatched)
			}
			var got []Change
			for _, ch := range w.changes {
				for _, p := range []*string{&ch.Path, &ch.To} {
					if *p != "" {
						if rel, err := filepath.Rel(ws, *p); err == nil && !strings.HasPrefix(rel, "..") {
							*p = rel
						}
					}
				}
				got = append(got, ch)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("told %+v, want %+v (output %q)", got, c.want, out)
			}
			if c.check != nil {
				c.check(t, ws)
			}
		})
	}
}

// TestWatchedWriteKeepsTheContentBefore: Changing runs before the change:
// what the file holds then is what it held before the command.
func TestWatchedWriteKeepsTheContentBefore(t *testing.T) {
	ws := t.TempDir()
	testfs.Write(t, filepath.Join(ws, "a"), "before\n")
	var w seenBefore
	o, _ := run(t, New(Options{}), ws, "echo after > a; rm a", func(s *Spec) { s.Writes = &w })
	if o.Unwatched != "" || !slices.Equal(w.held, []string{"before\n", "after\n"}) {
		t.Fatalf("the files held %q when the box told of their change (unwatched %q)", w.held, o.Unwatched)
	}
}

type seenBefore struct{ held []string }

func (s *seenBefore) Changing(_ context.Context, c Change) {
	b, _ := os.ReadFile(c.Path)
	s.held = append(s.held, string(b))
}

// TestUnwatched: where seccomp is off the run says its writes were not
// watched.
func TestUnwatched(t *testing.T) {
	var w told
	o, _ := run(t, New(Options{NoSeccomp: true}), t.TempDir(), "echo x > a", func(s *Spec) { s.Writes = &w })
	if o.Unwatched == "" || len(w.changes) != 0 {
		t.Fatalf("unwatched %q, told %+v", o.Unwatched, w.changes)
	}
}

// TestWatchStopsWithTheCommand: a Writes still busy with a call when the
// command's timeout or cancel comes (keeping a large renamed directory)
// is told to stop, and the run ends then, not when it is done.
func TestWatchStopsWithTheCommand(t *testing.T) {
	for _, c := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
	}{
		{"timeout", 500 * time.Millisecond, false},
		{"cancel", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &untilStopped{told: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				go func() {
					<-w.told
					cancel()
				}()
			}
			dir := t.TempDir()
			var out syncBuffer
			o, err := New(Options{}).Run(ctx, Spec{Command: "echo x > a", Dir: dir, Writable: []string{dir}, Output: &out, Timeout: c.timeout,
				MemoryBytes: 1 << 30, Processes: 512, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir}, Writes: w})
			if err != nil || o.Unwatched != "" || o.TimedOut != !c.cancel || o.Cancelled != c.cancel || !w.stopped {
				t.Fatalf("run: %v, %+v; the Writes was stopped: %v", err, o, w.stopped)
			}
		})
	}
}

// untilStopped is a Writes that, told of a change, works until it is
// told to stop.
type untilStopped struct {
	told    chan struct{}
	stopped bool
}

func (u *untilStopped) Changing(ctx context.Context, _ Change) {
	if u.stopped {
		return
	}
	close(u.told)
	<-ctx.Done()
	u.stopped = true
}

// TestWatchedRenameOfAStandIn: renaming a hidden path's stand-in inside
// the workspace is named as what it is, not as a directory moved in from
// outside the workspace.
func TestWatchedRenameOfAStandIn(t *testing.T) {
	ws := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{"hid/s": "secret\n"})
	var w told
	o, out := run(t, New(Options{}), ws, "mv hid hid2; echo $?", func(s *Spec) {
		s.Writes = &w
		s.Hidden = []string{filepath.Join(ws, "hid")}
	})
	var unknown []string
	for _, c := range w.changes {
		unknown = append(unknown, c.Unknown)
	}
	want := []string{"hid (a directory the command sees in place of the workspace's, such as a hidden path's stand-in)"}
	if o.Unwatched != "" || !slices.Equal(unknown, want) {
		t.Fatalf("told %q, want %q (unwatched %q, output %q)", unknown, want, o.Unwatched, out)
	}
}
