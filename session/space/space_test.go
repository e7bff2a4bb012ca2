package space

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/workspace"
)

// open is the number of spaces r holds.
func open(r *Registry) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.by)
}

func syncCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestASpaceIsSharedByItsDirectories: the holders of one workspace's
// directories share one space, watcher and .env list; another workspace
// has its own; the watcher starts at Start, not at Open, outlives its last
// holder by the grace and is stopped at once by Shutdown, which leaves no
// space open.
func TestASpaceIsSharedByItsDirectories(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	r := &Registry{Grace: time.Hour} // the test, not a timer, says when it ends
	a := r.Open([]string{dir})
	if a.Watcher() != nil {
		t.Error("the watcher started with Open")
	}
	b, c := r.Open([]string{dir}), r.Open([]string{other})
	if a != b || a.DotEnvs() != b.DotEnvs() {
		t.Fatal("two holders of one workspace do not share one space")
	}
	if c == a || c.DotEnvs() == a.DotEnvs() {
		t.Fatal("another workspace shares the first one's space")
	}
	a.Start()
	b.Start()
	c.Start()
	w := a.Watcher()
	if w == nil || b.Watcher() != w {
		t.Fatal("a started space has no watcher, or one per Start")
	}
	ctx := syncCtx(t)
	r.Close(a)
	if err := w.Sync(ctx); err != nil {
		t.Fatalf("the watcher stopped while a holder still has it: %v", err)
	}
	r.Close(b)
	if err := w.Sync(ctx); err != nil {
		t.Fatalf("the watcher stopped as soon as the last holder closed: %v", err)
	}
	// Opened again within the grace, the space has its walk still.
	if d := r.Open([]string{dir}); d != a || d.Watcher() != w {
		t.Fatal("a space opened again within the grace is a new one")
	} else {
		r.Close(d)
	}
	r.Close(c)
	// Shutdown does not wait for the grace.
	r.Shutdown()
	if err := w.Sync(ctx); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("the watcher runs on after shutdown: %v", err)
	}
	if err := c.Watcher().Sync(ctx); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("the other workspace's watcher runs on after shutdown: %v", err)
	}
	if n := open(r); n != 0 {
		t.Errorf("%d spaces open after shutdown, want 0", n)
	}
}

// TestAfterShutdownASpaceStopsWithItsLastHolder: a space still held at
// Shutdown runs on until its last holder closes it, then stops without
// grace.
func TestAfterShutdownASpaceStopsWithItsLastHolder(t *testing.T) {
	dir := t.TempDir()
	r := &Registry{Grace: time.Hour}
	a := r.Open([]string{dir})
	a.Start()
	w := a.Watcher()
	r.Shutdown()
	ctx := syncCtx(t)
	if err := w.Sync(ctx); err != nil {
		t.Fatalf("shutdown stopped a space still held: %v", err)
	}
	r.Close(a)
	if err := w.Sync(ctx); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("the watcher runs on after its last holder closed it after shutdown: %v", err)
	}
	if n := open(r); n != 0 {
		t.Errorf("%d spaces open, want 0", n)
	}
}

// TestSpaceStopsAfterItsGrace: the last holder gone, the space's watcher
// stops once the grace is over, and Open then makes a new space; a space
// stopped before it started does not start.
func TestSpaceStopsAfterItsGrace(t *testing.T) {
	dir := t.TempDir()
	stopped := make(chan struct{})
	r := &Registry{Grace: time.Millisecond, Stopped: func() { stopped <- struct{}{} }}
	a := r.Open([]string{dir})
	a.Start()
	w := a.Watcher()
	r.Close(a)
	<-stopped
	if err := w.Sync(syncCtx(t)); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("the watcher runs on after the grace: %v", err)
	}
	b := r.Open([]string{dir})
	if b == a {
		t.Fatal("a space opened after the grace is the stopped one")
	}
	r.Close(b)
	<-stopped
	if b.Start(); b.Watcher() != nil {
		t.Error("a space stopped before it started starts watching")
	}
}

// TestTheWholeFileSystemIsNotWatched: a space at / gets no watcher, and
// the Registry's Problem is told why.
func TestTheWholeFileSystemIsNotWatched(t *testing.T) {
	var told []string
	r := &Registry{Problem: func(reason string) { told = append(told, reason) }}
	sp := r.Open([]string{string(filepath.Separator)})
	defer r.Close(sp)
	sp.Start()
	if sp.Watcher() != nil {
		t.Error("a space at / is watched")
	}
	if len(told) != 1 || !strings.Contains(told[0], "whole file system") {
		t.Errorf("Problem was told %q, want why / is not watched", told)
	}
}

// TestSubscribersGetTheWatchersBatches: each subscriber gets every batch
// until it unsubscribes, the watcher's own included.
func TestSubscribersGetTheWatchersBatches(t *testing.T) {
	dir := t.TempDir()
	r := &Registry{}
	sp := r.Open([]string{dir})
	defer r.Close(sp)
	var first, second [][]string
	unsub := sp.Subscribe(func(paths []string) { first = append(first, paths) })
	sp.Subscribe(func(paths []string) { second = append(second, paths) })
	sp.onChange([]string{"a"})
	unsub()
	sp.onChange(nil)
	if len(first) != 1 || len(second) != 2 || second[1] != nil {
		t.Errorf("batches: first %q, second %q; want one and two", first, second)
	}

	batches := make(chan []string, 16)
	sp.Subscribe(func(paths []string) { batches <- paths })
	sp.Start()
	if sp.Watcher() == nil {
		t.Fatal("no watcher started")
	}
	ctx := syncCtx(t)
	if err := sp.Watcher().Sync(ctx); err != nil {
		t.Fatal(err)
	}
	made := filepath.Join(dir, "made.txt")
	if err := os.WriteFile(made, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case paths := <-batches:
			if paths == nil || slices.Contains(paths, made) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no batch named %s", made)
		}
	}
}
