package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/tools"
)

func hashOf(s string) string { return tools.Hash([]byte(s)) }

// notices counts what a store tells the user.
type notices struct{ texts []string }

func (n *notices) add(text string) { n.texts = append(n.texts, text) }

func (n *notices) count(part string) int {
	c := 0
	for _, t := range n.texts {
		if strings.Contains(t, part) {
			c++
		}
	}
	return c
}

// TestKeepAndGet: content is kept once, by its hash, and read back; a
// hash that is not one never names a file.
func TestKeepAndGet(t *testing.T) {
	data := t.TempDir()
	s := New(Options{DataDir: data, Session: "s1"})
	h, err := s.Keep([]byte("one\n"))
	if err != nil || h != hashOf("one\n") {
		t.Fatalf("Keep: %s, %v", h, err)
	}
	if _, err := s.Keep([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(s.Dir())
	if len(entries) != 1 {
		t.Errorf("the same content kept twice: %d files", len(entries))
	}
	if got, err := s.Get(h); err != nil || string(got) != "one\n" {
		t.Errorf("Get: %q, %v", got, err)
	}
	for _, bad := range []string{"sha256:../../etc/passwd", "md5:00", "sha256:" + strings.Repeat("A", 64)} {
		if _, err := s.Get(bad); err == nil {
			t.Errorf("Get(%q) found something", bad)
		}
	}
	if _, err := New(Options{Session: "s1"}).Keep([]byte("x")); err == nil {
		t.Error("a store without a data directory kept something")
	}
}

// TestKeepStaysWithinTheBound: past the bound the oldest checkpoints go,
// the newest stays, and the user is told once.
func TestKeepStaysWithinTheBound(t *testing.T) {
	var told notices
	s := New(Options{DataDir: t.TempDir(), Session: "s", Bytes: 100, Notice: told.add})
	var last string
	for i := range 50 {
		var err error
		if last, err = s.Keep([]byte(strings.Repeat(string(rune('a'+i%26)), 10) + string(rune('0'+i/26)))); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	entries, _ := os.ReadDir(s.Dir())
	for _, e := range entries {
		fi, _ := e.Info()
		total += fi.Size()
	}
	if total > 100 {
		t.Errorf("%d files of %d bytes, over the bound of 100", len(entries), total)
	}
	if _, err := s.Get(last); err != nil {
		t.Errorf("the newest checkpoint is gone: %v", err)
	}
	if n := told.count("oldest checkpoints were removed"); n != 1 {
		t.Errorf("told %d times that checkpoints were removed, want once", n)
	}
	// A store opened again (a new process) knows what is there.
	again := New(Options{DataDir: s.o.DataDir, Session: "s", Bytes: 100})
	if _, err := again.Keep([]byte(strings.Repeat("z", 60))); err != nil {
		t.Fatal(err)
	}
	total = 0
	entries, _ = os.ReadDir(s.Dir())
	for _, e := range entries {
		fi, _ := e.Info()
		total += fi.Size()
	}
	if total > 100 {
		t.Errorf("a store opened again went past the bound: %d bytes", total)
	}
}

// TestKeepAgainIsRecent: content kept again (a new record needs it) is
// the most recent, in this store and in one opened again: past the bound
// what no record kept since goes first.
func TestKeepAgainIsRecent(t *testing.T) {
	a, b, c, d := strings.Repeat("a", 10), strings.Repeat("b", 10), strings.Repeat("c", 10), strings.Repeat("d", 10)
	for _, reopen := range []bool{false, true} {
		t.Run(map[bool]string{false: "same store", true: "opened again"}[reopen], func(t *testing.T) {
			s := New(Options{DataDir: t.TempDir(), Session: "s", Bytes: 30})
			for _, body := range []string{a, b, c} {
				if _, err := s.Keep([]byte(body)); err != nil {
					t.Fatal(err)
				}
			}
			// Kept an hour ago: the clock that dates files is coarse.
			hourAgo := time.Now().Add(-time.Hour)
			for _, body := range []string{a, b, c} {
				name, _ := BlobName(hashOf(body))
				if err := os.Chtimes(filepath.Join(s.Dir(), name), hourAgo, hourAgo); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Keep([]byte(a)); err != nil {
				t.Fatal(err)
			}
			if reopen {
				s = New(Options{DataDir: s.o.DataDir, Session: "s", Bytes: 30})
			}
			if _, err := s.Keep([]byte(d)); err != nil {
				t.Fatal(err)
			}
			for body, want := range map[string]bool{a: true, b: false, c: true, d: true} {
				if _, err := s.Get(hashOf(body)); (err == nil) != want {
					t.Errorf("%.1s… kept: %v, want %v", body, err == nil, want)
				}
			}
		})
	}
}

// TestGetThroughForks: a fork finds what its parent kept; Adopt copies a
// child's checkpoint, only if it holds what its name says.
func TestGetThroughForks(t *testing.T) {
	data := t.TempDir()
	parents := map[string]string{"fork2": "fork1", "fork1": "root"}
	forkOf := func(_ context.Context, id string) (string, error) { return parents[id], nil }
	root := New(Options{DataDir: data, Session: "root"})
	h, err := root.Keep([]byte("old\n"))
	if err != nil {
		t.Fatal(err)
	}
	fork := New(Options{DataDir: data, Session: "fork2", ForkOf: forkOf})
	if got, err := fork.Get(h); err != nil || string(got) != "old\n" {
		t.Errorf("a fork of a fork does not find its root's checkpoint: %q %v", got, err)
	}
	if _, err := New(Options{DataDir: data, Session: "other"}).Get(h); err == nil {
		t.Error("an unrelated session found another's checkpoint")
	}
	parent := New(Options{DataDir: data, Session: "parent"})
	if err := parent.Adopt("root", h); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(parent.Dir(), strings.TrimPrefix(h, "sha256:"))); err != nil {
		t.Errorf("Adopt did not keep it: %v", err)
	}
	// A child's checkpoint that does not hold its hash is not adopted.
	lie := hashOf("what it should be")
	name, _ := BlobName(lie)
	if _, err := StoreBlob(Dir(data, "child"), name, []byte("something else")); err != nil {
		t.Fatal(err)
	}
	if err := parent.Adopt("child", lie); err == nil {
		t.Error("a checkpoint whose content does not match its name was adopted")
	}
	if err := Remove(data, "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := fork.Get(h); err == nil {
		t.Error("a removed session's checkpoints are still found")
	}
}

// TestRestore: files go back to their checkpoint, on disk with their
// mode when made anew; a file the agent made is removed with the empty
// directories made since; a checkpoint that is gone is said.
func TestRestore(t *testing.T) {
	ws := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{"changed": "now\n", "old/kept": "k\n"})
	since := time.Now().Add(-time.Second)
	testfs.Write(t, filepath.Join(ws, "made/deep/new"), "new\n")
	root, err := confine.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := New(Options{DataDir: t.TempDir(), Session: "s"})
	was, _ := s.Keep([]byte("was\n"))
	gone, _ := s.Keep([]byte("deleted\n"))
	env := &tools.Env{Root: root}
	done, failed := s.Restore(context.Background(), env, []event.FileRestore{
		{Path: filepath.Join(ws, "changed"), From: hashOf("now\n"), To: was},
		{Path: filepath.Join(ws, "deleted"), To: gone, Mode: 0o750},
		{Path: filepath.Join(ws, "made/deep/new"), From: hashOf("new\n")},
		{Path: filepath.Join(ws, "lost"), To: hashOf("never kept")},
	}, since)
	if len(done) != 3 || len(failed) != 1 || !strings.Contains(failed[0], "lost (the checkpoint of") {
		t.Fatalf("done %+v, failed %q", done, failed)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "changed")); string(b) != "was\n" {
		t.Errorf("changed = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(ws, "deleted")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("deleted is not back with its mode: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("made/, emptied by the restore and made since, is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "old")); err != nil {
		t.Errorf("old/, there before, went: %v", err)
	}
}
