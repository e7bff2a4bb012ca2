//go:build linux

// The locks are Linux's: elsewhere nothing is locked (fslock_other.go),
// and these tests, which check that locks keep things apart, do not apply.

package fslock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// tree makes root/ws/{a.txt, sub/b.txt, sub/w/, link -> sub,
// abs -> root/other, up -> sub/w/../../../other} and root/other/x, and
// returns root.
func tree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws/sub/w", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ws/a.txt", "ws/sub/b.txt", "other/x"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"ws/link": "sub", "ws/abs": filepath.Join(root, "other"), "ws/up": "sub/w/../../../other"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func open(t *testing.T) *Locks {
	t.Helper()
	l, err := Open(filepath.Join(t.TempDir(), "cache", "fs.lock"))
	if err != nil {
		t.Fatalf("this system cannot take the locks: %v", err)
	}
	return l
}

func TestLookupDirs(t *testing.T) {
	root := tree(t)
	tests := []struct {
		path string
		want []string // the directories below root looked in, relative, sorted
	}{
		{"ws/a.txt", []string{"ws"}},
		{"ws/sub/b.txt", []string{"ws", "ws/sub"}},
		{"ws/link/b.txt", []string{"ws", "ws/sub"}},
		{"ws/abs/x", []string{"other", "ws"}},
		{"ws/up/x", []string{"other", "ws", "ws/sub"}},
		{"ws/./sub/../a.txt", []string{"ws"}}, // ".." in sub is no name a command could swap
		{"ws/missing/deeper/c", []string{"ws"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			all := lookupDirs(root + "/" + tt.path) // not cleaned: ".." is the walk's to follow
			var below []string
			for _, d := range all {
				if r, err := filepath.Rel(root, d); err == nil && r != "." && !strings.HasPrefix(r, "..") {
					below = append(below, r)
				}
			}
			slices.Sort(below)
			if below = slices.Compact(below); !slices.Equal(below, tt.want) {
				t.Errorf("lookupDirs(%s) = %v: below the root %v, want %v", tt.path, all, below, tt.want)
			}
			if !slices.Contains(all, root) || !slices.Contains(all, "/") {
				t.Errorf("lookupDirs(%s) = %v: the root and / are looked in too", tt.path, all)
			}
		})
	}
}

// TestEditorSeesCommands: an editor call on a path is refused (without
// waiting) exactly when a command may write a directory a lookup of the
// path goes through, or one of their ancestors.
func TestEditorSeesCommands(t *testing.T) {
	root := tree(t)
	tests := []struct {
		name      string
		command   string // the command's writable directory
		path      string
		wantBusy  bool
		renameSub bool // ws/sub is renamed ws/moved while the command runs
	}{
		{"same workspace", "ws", "ws/a.txt", true, false},
		{"command in an ancestor", "", "ws/sub/b.txt", true, false},
		{"command nested elsewhere", "ws/sub", "ws/a.txt", false, false},
		{"command nested on the way", "ws/sub", "ws/sub/b.txt", true, false},
		{"through a link into the command's directory", "ws/sub", "ws/link/b.txt", true, false},
		{"through a link out to it", "other", "ws/abs/x", true, false},
		{"through a link's own way", "ws/sub", "ws/up/x", true, false},
		{"unrelated directory", "other", "ws/a.txt", false, false},
		{"command's directory renamed", "ws/sub", "ws/moved/b.txt", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := open(t)
			release, err := l.Command(context.Background(), []string{filepath.Join(root, tt.command)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			if tt.renameSub {
				if err := os.Rename(filepath.Join(root, "ws/sub"), filepath.Join(root, "ws/moved")); err != nil {
					t.Fatal(err)
				}
				defer os.Rename(filepath.Join(root, "ws/moved"), filepath.Join(root, "ws/sub"))
			}
			done, err := l.Editor(context.Background(), filepath.Join(root, tt.path), false)
			if busy := errors.Is(err, ErrBusy); busy != tt.wantBusy || (err != nil && !busy) {
				t.Fatalf("Editor(%s) with a command in %q: %v, want busy %v", tt.path, tt.command, err, tt.wantBusy)
			}
			if err == nil {
				done()
			}
		})
	}
}

// TestSameSidesShare: editor calls do not keep each other out, nor do
// commands.
func TestSameSidesShare(t *testing.T) {
	root := tree(t)
	l := open(t)
	path := filepath.Join(root, "ws/a.txt")
	e1, err := l.Editor(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := l.Editor(context.Background(), path, false)
	if err != nil {
		t.Fatalf("a second editor call on the same path: %v", err)
	}
	e1()
	e2()
	c1, err := l.Command(context.Background(), []string{filepath.Join(root, "ws")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := l.Command(context.Background(), []string{filepath.Join(root, "ws")}, nil)
	if err != nil {
		t.Fatalf("a second command in the same directory: %v", err)
	}
	c1()
	// One command left: the editor is still kept out.
	if _, err := l.Editor(context.Background(), path, false); !errors.Is(err, ErrBusy) {
		t.Fatalf("an editor call while a command runs: %v, want ErrBusy", err)
	}
	c2()
	if e, err := l.Editor(context.Background(), path, false); err != nil {
		t.Fatalf("an editor call once the commands ended: %v", err)
	} else {
		e()
	}
}

// TestEachWaitsForTheOther: a command waits for an editor call in flight
// (and says so), an edit waits for a command (a cancelled wait fails with
// the context's error), and goes ahead once it ends.
func TestEachWaitsForTheOther(t *testing.T) {
	root := tree(t)
	l := open(t)
	ws, path := filepath.Join(root, "ws"), filepath.Join(root, "ws/a.txt")

	endEditor, err := l.Editor(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	var ended atomic.Bool
	waiting := make(chan struct{})
	started := make(chan error)
	go func() {
		release, err := l.Command(context.Background(), []string{ws}, func() { close(waiting) })
		if err == nil && !ended.Load() {
			err = errors.New("the command started while the editor call was in flight")
		}
		started <- err
		if release != nil {
			release()
		}
	}()
	<-waiting
	ended.Store(true)
	endEditor()
	if err := <-started; err != nil {
		t.Fatal(err)
	}

	endCommand, err := l.Command(context.Background(), []string{ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Editor(ctx, path, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait for a command: %v, want context.Canceled", err)
	}
	asked := make(chan error)
	go func() {
		done, err := l.Editor(context.Background(), path, true)
		asked <- err
		if done != nil {
			done()
		}
	}()
	endCommand()
	if err := <-asked; err != nil {
		t.Fatalf("the edit waiting for the command: %v", err)
	}
}

// TestNilLocksKeepNothingApart: without a lock file every call returns at
// once.
func TestNilLocksKeepNothingApart(t *testing.T) {
	var l *Locks
	release, err := l.Command(context.Background(), []string{"/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done, err := l.Editor(context.Background(), "/etc/hostname", false)
	if err != nil {
		t.Fatal(err)
	}
	release()
	done()
}

// TestEditorKnowsBackgroundCommands: an editor call in the way of a
// command that runs in the background fails at once, waiting or not
// (ErrBackground, which is ErrBusy too); one in the way of other commands
// only is ErrBusy, and waits for them. A command in the background keeps
// editor calls out as any command does, and waits for one in flight.
func TestEditorKnowsBackgroundCommands(t *testing.T) {
	root := tree(t)
	ws, sub, other := filepath.Join(root, "ws"), filepath.Join(root, "ws/sub"), filepath.Join(root, "other")
	tests := []struct {
		name             string
		commands, inBack []string // directories of commands, and of commands in the background
		path             string
		want             error // nil: the call goes ahead
	}{
		{"in the background in the workspace", nil, []string{ws}, "ws/a.txt", ErrBackground},
		{"in the background in an ancestor", nil, []string{root}, "ws/sub/b.txt", ErrBackground},
		{"in the background through a link", nil, []string{sub}, "ws/link/b.txt", ErrBackground},
		{"in the background elsewhere, a command here", []string{ws}, []string{other}, "ws/a.txt", ErrBusy},
		{"both here", []string{ws}, []string{ws}, "ws/a.txt", ErrBackground},
		{"in the background elsewhere only", nil, []string{other}, "ws/a.txt", nil},
		{"nested elsewhere in the background", nil, []string{sub}, "ws/a.txt", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := open(t)
			for _, d := range tt.commands {
				release, err := l.Command(context.Background(), []string{d}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer release()
			}
			for _, d := range tt.inBack {
				release, err := l.Background(context.Background(), []string{d}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer release()
			}
			for _, wait := range []bool{false, true} {
				// A wait that would not end is cut short: only an
				// ErrBusy from waiting ends by the context.
				ctx, cancel := context.WithCancel(context.Background())
				if wait && tt.want == ErrBusy {
					cancel()
				}
				done, err := l.Editor(ctx, filepath.Join(root, tt.path), wait)
				cancel()
				switch {
				case tt.want == nil && err != nil:
					t.Fatalf("Editor(wait %v): %v, want it to go ahead", wait, err)
				case tt.want == nil:
					done()
				case tt.want == ErrBackground && (err != ErrBackground || !errors.Is(err, ErrBusy)):
					t.Fatalf("Editor(wait %v): %v, want ErrBackground at once, which is ErrBusy", wait, err)
				case tt.want == ErrBusy && (errors.Is(err, ErrBackground) || !errors.Is(err, ErrBusy) && !errors.Is(err, context.Canceled)):
					t.Fatalf("Editor(wait %v): %v, want ErrBusy (or the cancelled wait for it)", wait, err)
				}
			}
		})
	}

	// Released, it keeps nothing out; it waits for an editor call in
	// flight, and one that waits for another command fails once it starts.
	l := open(t)
	path := filepath.Join(root, "ws/a.txt")
	endEditor, err := l.Editor(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	var ended atomic.Bool
	waiting := make(chan struct{})
	started := make(chan func())
	go func() {
		release, err := l.Background(context.Background(), []string{ws}, func() { close(waiting) })
		if err != nil || !ended.Load() {
			t.Errorf("the command in the background started while an editor call was in flight (%v)", err)
		}
		started <- release
	}()
	<-waiting
	ended.Store(true)
	endEditor()
	releaseBackground := <-started

	releaseBackground()
	endCommand, err := l.Command(context.Background(), []string{ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer endCommand()
	asked := make(chan error)
	go func() {
		done, err := l.Editor(context.Background(), path, true)
		if done != nil {
			done()
		}
		asked <- err
	}()
	releaseBackground, err = l.Background(context.Background(), []string{ws}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseBackground()
	if err := <-asked; err != ErrBackground {
		t.Fatalf("an edit waiting for a command when one starts in the background: %v, want ErrBackground", err)
	}
}
