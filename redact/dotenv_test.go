package redact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/workspace"
)

// watched lists the .env files below dirs the way a session does: a
// workspace.Watcher whose walk and events feed a DotEnvs.
func watched(t *testing.T, dirs ...string) *DotEnvs {
	t.Helper()
	d := NewDotEnvs(dirs)
	watchedBy(t, d, dirs...)
	return d
}

// watchedBy starts a watcher that keeps d current.
func watchedBy(tb testing.TB, d *DotEnvs, dirs ...string) *workspace.Watcher {
	tb.Helper()
	w, err := workspace.Watch(dirs, workspace.WatchOptions{Pick: DotEnvName, Found: d.Found})
	if err != nil {
		tb.Fatalf("a watcher is needed for this test: %v", err)
	}
	tb.Cleanup(func() { w.Close() })
	d.Watch(w)
	return w
}

// ways are the two ways a workspace's .env files are listed: by a
// watcher (watched), and by a walk of the list's own (without one).
type way struct {
	name string
	envs *DotEnvs
}

func ways(t *testing.T, ws string) []way {
	return []way{{"watched", watched(t, ws)}, {"walked", NewDotEnvs([]string{ws})}}
}

// current is d.Current, failing the test on an error.
func current(t *testing.T, d *DotEnvs) DotEnvSet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set, err := d.Current(ctx)
	if err != nil {
		t.Fatalf("Current: %v", err)
	}
	return set
}

// redactorOf is a redactor built from set, as a session builds one.
func redactorOf(set DotEnvSet) *Redactor {
	r := New(nil)
	for _, f := range set.Files {
		r.AddDotEnv(f.Name, f.Data)
	}
	return r
}

func names(set DotEnvSet) []string {
	var out []string
	for _, f := range set.Files {
		out = append(out, f.Name)
	}
	return out
}

// TestDotEnvsFindsEveryFile: every .env file below the workspace is found,
// whatever its depth, the directories before it or the .env files before
// it (the walk per session stopped at depth 8, 5,000 directories and 100
// files), by a watcher's walk and by a walk of its own alike; .git,
// node_modules, ignored directories, links and examples are not read.
func TestDotEnvsFindsEveryFile(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	deep := strings.Repeat("d/", 12)
	files := map[string]string{
		".env":                    "TOP=top-value-1234\n",
		"sub/.env":                "DB_PASS=sub-value-5678\n",
		"services/api/.env.local": "API_TOKEN=api-value-9012\n",
		deep + ".env":             "FAR=far-value-7890\n",
		"zz/.env":                 "LATE=after-many-dirs-value-8642\n",
		"node_modules/pkg/.env":   "NM=nodemod-value-1111\n",
		".git/.env":               "G=gitdir-value-2222\n",
		".gitignore":              "build/\n.env\n",
		"build/.env":              "B=ignored-dir-value-3333\n",
		"sub/.env.example":        "EX=example-value-4444\n",
		"services/.gitignore":     "cache\n",
		"services/cache/.env":     "C=nested-ignore-value-5555\n",
	}
	// 120 .env files before zz/.env, in 5,100 directories.
	for i := range 120 {
		files[fmt.Sprintf("many/p%03d/.env", i)] = fmt.Sprintf("K%d=many-value-%05d\n", i, i)
	}
	testfs.WriteTree(t, ws, files)
	for i := range 5100 {
		if err := os.MkdirAll(filepath.Join(ws, "empty", fmt.Sprintf("d%04d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testfs.WriteTree(t, outside, map[string]string{"linked/.env": "L=outside-dir-value-6666\n", "credentials": "S=outside-file-value-7777\n"})
	if err := os.Symlink(filepath.Join(outside, "linked"), filepath.Join(ws, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "credentials"), filepath.Join(ws, "sub", ".env.local")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range ways(t, ws) {
		t.Run(tt.name, func(t *testing.T) {
			set := current(t, tt.envs)
			got := names(set)
			if len(got) != 125 || got[0] != ".env" || !slices.Contains(got, deep+".env") || !slices.Contains(got, "zz/.env") {
				t.Errorf("files %q (%d), want .env first and the 124 others, %s.env and zz/.env among them", got, len(got), deep)
			}
			if set.Left != "" {
				t.Errorf("Left = %q, want nothing left out", set.Left)
			}
			r := redactorOf(set)
			for _, v := range []string{"top-value-1234", "sub-value-5678", "api-value-9012", "far-value-7890", "after-many-dirs-value-8642", "many-value-00119"} {
				if out := r.Redact("x " + v + " y"); strings.Contains(out, v) {
					t.Errorf("%s not redacted: %q", v, out)
				}
			}
			if out := r.Redact("sub-value-5678"); out != "[REDACTED:sub/.env:DB_PASS]" {
				t.Errorf("marker %q does not name the file", out)
			}
			for _, v := range []string{"nodemod-value-1111", "gitdir-value-2222", "ignored-dir-value-3333", "example-value-4444",
				"nested-ignore-value-5555", "outside-dir-value-6666", "outside-file-value-7777"} {
				if out := r.Redact(v); out != v {
					t.Errorf("%s was read: %q", v, out)
				}
			}
		})
	}
}

// TestDotEnvsFollowsChanges: a .env file created, changed, removed or
// moved counts from the next Current on, without waiting for the
// watcher's debounce; what a file held before stays redacted.
func TestDotEnvsFollowsChanges(t *testing.T) {
	ws := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{"src/main.go": "package main\n"})
	d := watched(t, ws)
	if set := current(t, d); len(set.Files) != 0 {
		t.Fatalf("files %q in a workspace with none", names(set))
	}
	deep := filepath.Join(ws, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	steps := []struct {
		name  string
		do    func() error
		files []string
		known []string // values redacted after the step
	}{
		{"created deep", func() error {
			return write(filepath.Join(deep, ".env"), "K=created-value-1111\n")
		}, []string{"a/b/c/d/e/f/g/h/i/j/.env"}, []string{"created-value-1111"}},
		{"changed", func() error {
			return write(filepath.Join(deep, ".env"), "K=changed-value-2222\n")
		}, []string{"a/b/c/d/e/f/g/h/i/j/.env", "a/b/c/d/e/f/g/h/i/j/.env"}, []string{"created-value-1111", "changed-value-2222"}},
		{"moved with its directory", func() error {
			return os.Rename(filepath.Join(ws, "a"), filepath.Join(ws, "moved"))
		}, []string{"moved/b/c/d/e/f/g/h/i/j/.env", "a/b/c/d/e/f/g/h/i/j/.env"}, []string{"created-value-1111", "changed-value-2222"}},
		{"removed", func() error {
			return os.RemoveAll(filepath.Join(ws, "moved"))
		}, []string{"moved/b/c/d/e/f/g/h/i/j/.env", "a/b/c/d/e/f/g/h/i/j/.env"}, []string{"created-value-1111", "changed-value-2222"}},
		{"a link to a file outside", func() error {
			return os.Symlink(filepath.Join(t.TempDir(), "credentials"), filepath.Join(ws, ".env"))
		}, []string{"moved/b/c/d/e/f/g/h/i/j/.env", "a/b/c/d/e/f/g/h/i/j/.env"}, nil},
		{"a new directory with one", func() error {
			return write(filepath.Join(ws, "svc", "api", ".env.local"), "T=new-dir-value-3333\n")
		}, []string{"svc/api/.env.local", "moved/b/c/d/e/f/g/h/i/j/.env", "a/b/c/d/e/f/g/h/i/j/.env"}, []string{"new-dir-value-3333", "changed-value-2222"}},
	}
	version := uint64(0)
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		set := current(t, d)
		if got := names(set); !slices.Equal(got, s.files) {
			t.Errorf("%s: files %q, want %q", s.name, got, s.files)
		}
		if set.Version <= version && s.known != nil {
			t.Errorf("%s: version %d did not move from %d", s.name, set.Version, version)
		}
		version = set.Version
		r := redactorOf(set)
		for _, v := range s.known {
			if out := r.Redact(v); out == v {
				t.Errorf("%s: %s not redacted", s.name, v)
			}
		}
	}
}

func write(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// TestDotEnvsBounds: a repository cannot make the list unbounded: the
// assignments and bytes taken are bounded, shallowest files first, a huge
// file is read in part rather than not at all, and past maxDotEnvFiles
// the deepest files are forgotten; what is left out is said.
func TestDotEnvsBounds(t *testing.T) {
	ws := t.TempDir()
	var many strings.Builder
	for i := range 2 * maxDotEnvLines {
		fmt.Fprintf(&many, "K%d=deep-value-%06d\n", i, i)
	}
	huge := "FIRST=huge-first-value-4321\n" + strings.Repeat("# filler line of a huge .env file\n", 3*dotEnvMax/34)
	testfs.WriteTree(t, ws, map[string]string{
		".env":          "TOP=top-value-1234\n",
		"big/.env":      huge,
		"x/y/z/.env":    many.String(),
		"x/y/z/w/.env":  "W=past-the-bound-9876\n",
		"notes/.env.qa": "QA=qa-value-5555\n",
	})
	set := current(t, NewDotEnvs([]string{ws}))
	if got, want := names(set), []string{".env", "big/.env", "notes/.env.qa", "x/y/z/.env"}; !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	lines := 0
	for _, f := range set.Files {
		lines += assignments(f.Data)
	}
	if lines != maxDotEnvLines {
		t.Errorf("%d assignments taken, want the bound, %d", lines, maxDotEnvLines)
	}
	r := redactorOf(set)
	for _, v := range []string{"top-value-1234", "huge-first-value-4321", "qa-value-5555", "deep-value-000000"} {
		if out := r.Redact(v); out == v {
			t.Errorf("%s not redacted", v)
		}
	}
	if out := r.Redact("past-the-bound-9876"); out != "past-the-bound-9876" {
		t.Errorf("a file past the bound was read: %q", out)
	}
	for _, want := range []string{"big/.env", "x/y/z/.env", "x/y/z/w/.env"} {
		if !strings.Contains(set.Left, want) {
			t.Errorf("Left = %q, does not name %s", set.Left, want)
		}
	}

	// Millions of .env files: the list keeps the shallowest.
	d := NewDotEnvs([]string{ws})
	for i := range maxDotEnvFiles + 50 {
		d.Found(filepath.Join(ws, "junk", fmt.Sprintf("d%06d", i), ".env"))
	}
	d.Found(filepath.Join(ws, ".env"))
	d.mu.Lock()
	n, top, forgot := len(d.files), d.files[filepath.Join(ws, ".env")] != nil, d.forgot
	d.mu.Unlock()
	if n > maxDotEnvFiles || !top || forgot == 0 {
		t.Errorf("%d files listed (the .env at the top among them: %v), %d forgotten; want at most %d, the top one kept", n, top, forgot, maxDotEnvFiles)
	}
	if set := current(t, d); !strings.Contains(set.Left, "not listed") || !slices.Contains(names(set), ".env") {
		t.Errorf("Left = %q, files %q: want the forgotten files said and .env read", set.Left, names(set))
	}
}

// stuck is a watcher whose first walk never ends.
type stuck struct{}

func (stuck) Sync(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func (stuck) Degraded() string { return "" }

// TestDotEnvsWaitsForTheWalk: until the watcher's walk is done, Current
// waits, and gives up with ctx's error: the list is never answered
// incomplete.
func TestDotEnvsWaitsForTheWalk(t *testing.T) {
	ws := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{".env": "K=waited-value-1234\n"})
	d := NewDotEnvs([]string{ws})
	d.Watch(stuck{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if set, err := d.Current(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Current = %q, %v; want the deadline's error", names(set), err)
	}
}

// TestDotEnvsWithoutAFullWatcher: when the watcher cannot watch every
// directory (the OS's limit), Current walks the tree itself, so a .env
// made where no watch sees it still counts.
func TestDotEnvsWithoutAFullWatcher(t *testing.T) {
	ws := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{"a/x.go": "package a\n", "b/y.go": "package b\n", "c/d/z.go": "package d\n"})
	d := NewDotEnvs([]string{ws})
	w, err := workspace.Watch([]string{ws}, workspace.WatchOptions{Pick: DotEnvName, Found: d.Found, Limit: 2})
	if err != nil {
		t.Fatalf("a watcher is needed for this test: %v", err)
	}
	defer w.Close()
	d.Watch(w)
	if !w.WaitReady(time.Minute) || w.Degraded() == "" {
		t.Fatalf("the watcher is not degraded with a limit of 2 directories: %q", w.Degraded())
	}
	if err := write(filepath.Join(ws, "c", "d", ".env"), "K=unwatched-value-7531\n"); err != nil {
		t.Fatal(err)
	}
	set := current(t, d)
	if !slices.Equal(names(set), []string{"c/d/.env"}) {
		t.Errorf("files %q, want c/d/.env", names(set))
	}
}
