//go:build unix

package confine

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// These tests hold the Root to its promises through its own API. The
// tests in sandbox (escape_test.go, hidden_test.go, special_test.go) hold
// every tool to them too, through the tools.

// TestRootEscapes tries every way out of the workspace with every way in:
// each is refused with an error naming the path and the workspace, and
// nothing outside changes.
func TestRootEscapes(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	testfs.Write(t, secret, "OUTSIDE-CONTENT\n")
	testfs.Write(t, filepath.Join(outside, "dir", "f.txt"), "OUTSIDE-CONTENT\n")
	must(t, os.Symlink(secret, filepath.Join(ws, "link-file")))
	must(t, os.Symlink(filepath.Join(outside, "dir"), filepath.Join(ws, "link-dir")))
	must(t, os.Symlink("loop-b", filepath.Join(ws, "loop-a")))
	must(t, os.Symlink("loop-a", filepath.Join(ws, "loop-b")))
	must(t, os.Symlink("/proc/self/root"+outside, filepath.Join(ws, "proc-link")))
	must(t, os.Link(secret, filepath.Join(ws, "hard-link")))
	rel, _ := filepath.Rel(ws, secret)
	r := openRoot(t, ws)
	for name, p := range map[string]string{
		"relative ..":          rel,
		"dot-dot in middle":    "sub/../../" + filepath.Base(outside) + "/secret.txt",
		"absolute outside":     secret,
		"absolute /etc":        "/etc/passwd",
		"symlink file":         "link-file",
		"symlink dir":          "link-dir/f.txt",
		"symlink loop":         "loop-a",
		"/proc/self/root":      "/proc/self/root" + secret,
		"symlink to /proc":     "proc-link/secret.txt",
		"hard link to outside": "hard-link",
	} {
		for _, o := range ops {
			t.Run(name+"/"+o.name, func(t *testing.T) {
				err := o.do(r, p)
				if err == nil {
					t.Fatal("not refused")
				}
				if msg := err.Error(); !strings.Contains(msg, ws) || !strings.Contains(msg, p) && !strings.Contains(msg, filepath.Base(p)) {
					t.Fatalf("error does not name the workspace %s and the path %s: %q", ws, p, msg)
				}
			})
		}
	}
	if _, err := r.ReadFile("link-dir/f.txt", 0); err == nil {
		t.Fatal("read through a link to outside")
	}
	for _, f := range []string{secret, filepath.Join(outside, "dir", "f.txt")} {
		if b, _ := os.ReadFile(f); string(b) != "OUTSIDE-CONTENT\n" {
			t.Fatalf("%s changed: %q", f, b)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 2 {
		t.Fatalf("files appeared outside: %v", ents)
	}
}

// TestRootAdditionalDirectories: absolute paths in an additional
// directory are inside; a refusal names every directory.
func TestRootAdditionalDirectories(t *testing.T) {
	main, extra, outside := t.TempDir(), t.TempDir(), t.TempDir()
	testfs.Write(t, filepath.Join(extra, "lib.txt"), "extra content\n")
	r := openRoot(t, main, extra)
	if b, err := r.ReadFile(filepath.Join(extra, "lib.txt"), 0); err != nil || string(b) != "extra content\n" {
		t.Fatalf("additional directory not readable: %q, %v", b, err)
	}
	err := r.WriteFile(filepath.Join(outside, "x"), []byte("x"))
	if err == nil || !strings.Contains(err.Error(), main) || !strings.Contains(err.Error(), extra) {
		t.Fatalf("outside write: %v", err)
	}
	if got := r.Dirs(); !slices.Equal(got, []string{main, extra}) || r.Dir() != main {
		t.Fatalf("Dirs() = %v, Dir() = %s", got, r.Dir())
	}
}

// hiddenRoot is a workspace (as at $HOME) holding bridle's data
// directory, its settings and a credential store, hidden, and links into
// them.
func hiddenRoot(t *testing.T) (r *Root, ws, data, config, ssh string) {
	ws = t.TempDir()
	t.Setenv("HOME", ws)
	data, config, ssh = filepath.Join(ws, ".local", "share", "bridle"), filepath.Join(ws, ".config", "bridle"), filepath.Join(ws, ".ssh")
	testfs.Write(t, filepath.Join(data, "bridle.db"), "DB\n")
	testfs.Write(t, filepath.Join(data, "artifacts", "s", "a3.0.txt"), "ART\n")
	testfs.Write(t, filepath.Join(config, "settings.json"), "{}\n")
	testfs.Write(t, filepath.Join(ssh, "id_ed25519"), "KEY\n")
	testfs.Write(t, filepath.Join(ws, "notes.txt"), "visible\n")
	testfs.Write(t, filepath.Join(ws, "src", "main.go"), "package main\n")
	for link, target := range map[string]string{
		"link-data":   ".local/share/bridle",
		"link-db":     ".local/share/bridle/bridle.db",
		"link-ssh":    ".ssh",
		"src/up-data": "../.local/share/bridle",
	} {
		must(t, os.Symlink(target, filepath.Join(ws, link)))
	}
	r = openRoot(t, ws)
	r.HideOwn(data, config)
	r.Hide(ssh)
	return r, ws, data, config, ssh
}

// TestRootHidden: every way in refuses a hidden path, by name, through
// "..", and through links, as ErrHiddenPath with the reason; nothing
// hidden is created.
func TestRootHidden(t *testing.T) {
	r, ws, data, config, ssh := hiddenRoot(t)
	for _, p := range []string{
		".local/share/bridle/bridle.db", filepath.Join(data, "bridle.db"),
		"src/../.local/share/bridle/bridle.db", "link-data/bridle.db",
		"src/up-data/bridle.db", "link-db", "link-data/artifacts/s/a3.0.txt",
		".config/bridle/settings.json", ".ssh/id_ed25519", "link-ssh/id_ed25519",
	} {
		for _, o := range ops {
			if o.name == "ReadDir" || o.name == "OpenTree" {
				continue // files: these refuse them as files anyway
			}
			if err := o.do(r, p); !errors.Is(err, ErrHiddenPath) {
				t.Errorf("%s %s: %v, want a hidden-path refusal", o.name, p, err)
			}
		}
		// CheckWrite goes by names and does not follow a final link (the
		// write itself refuses it, above).
		if fi, err := os.Lstat(filepath.Join(ws, p)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if err := r.CheckWrite(p); !errors.Is(err, ErrHiddenPath) {
			t.Errorf("CheckWrite %s: %v", p, err)
		}
	}
	for _, p := range []string{".local/share/bridle", data, "link-data", "src/up-data", ".ssh", "link-ssh", "src/../.ssh", ".config/bridle"} {
		for _, o := range ops {
			if o.name == "Open" || o.name == "ReadFile" || o.name == "WriteFile" {
				continue
			}
			if err := o.do(r, p); !errors.Is(err, ErrHiddenPath) {
				t.Errorf("%s %s: %v, want a hidden-path refusal", o.name, p, err)
			}
		}
		if err := r.WriteFile(p+"/new.txt", []byte("x")); !errors.Is(err, ErrHiddenPath) {
			t.Errorf("WriteFile in %s: %v", p, err)
		}
	}
	for _, p := range []string{".ssh", ".local/share/bridle/bridle.db"} {
		if _, err := r.Lstat(p); !errors.Is(err, ErrHiddenPath) {
			t.Errorf("Lstat %s: %v", p, err)
		}
		if _, err := r.Readlink(p); !errors.Is(err, ErrHiddenPath) {
			t.Errorf("Readlink %s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ssh, "new.txt")); err == nil {
		t.Error("a file was created in a hidden directory")
	}
	for _, c := range []struct{ path, want string }{
		{".local/share/bridle/bridle.db", "is bridle's own file (" + data + ": its settings, database, artifacts or cache)"},
		{".config/bridle/settings.json", "bridle's own file (" + config},
		{".ssh/id_ed25519", "is a credential store (" + ssh + ")"},
	} {
		if _, err := r.ReadFile(c.path, 0); err == nil || !strings.HasPrefix(err.Error(), c.path+" ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadFile %s: %v, want %q", c.path, err, c.want)
		}
	}
	secrets := filepath.Join(ws, "secrets")
	testfs.Write(t, filepath.Join(secrets, "x"), "x\n")
	r.Hide(secrets)
	if _, err := r.ReadFile("secrets/x", 0); err == nil || !strings.Contains(err.Error(), "sandbox.command.hidden_paths: "+secrets) {
		t.Errorf("ReadFile secrets/x: %v", err)
	}
	if got := r.Hidden(); !slices.Equal(got, []string{data, config, ssh, secrets}) {
		t.Errorf("Hidden() = %v", got)
	}
	ents, err := r.ReadDir(".")
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if slices.Contains(names, ".ssh") || slices.Contains(names, "secrets") || !slices.Contains(names, "notes.txt") {
		t.Errorf("ReadDir(.) = %v: hidden entries must be left out, others kept", names)
	}
	// Renamed, a hidden directory stays hidden by its identity.
	must(t, os.Rename(ssh, filepath.Join(ws, "keys")))
	if _, err := r.ReadFile("keys/id_ed25519", 0); !errors.Is(err, ErrHiddenPath) {
		t.Errorf("renamed hidden directory: %v", err)
	}
}

// TestRootLocate: a location is given for what the tools would reach,
// absolute, and for nothing outside the workspace, hidden, or reached
// through a link out; a Locator answers the same, asked twice.
func TestRootLocate(t *testing.T) {
	r, ws, data, _, ssh := hiddenRoot(t)
	outside := t.TempDir()
	testfs.Write(t, filepath.Join(outside, "secret.txt"), "x\n")
	must(t, os.Symlink(outside, filepath.Join(ws, "link-out")))
	must(t, os.Symlink("loop-b", filepath.Join(ws, "loop-a")))
	must(t, os.Symlink("loop-a", filepath.Join(ws, "loop-b")))
	must(t, os.Symlink("notes.txt", filepath.Join(ws, "link-notes")))
	for path, want := range map[string]string{
		"notes.txt": filepath.Join(ws, "notes.txt"), "src/main.go": filepath.Join(ws, "src", "main.go"), "src": filepath.Join(ws, "src"),
		".": ws, "link-notes": filepath.Join(ws, "link-notes"), "new/dir/file.txt": filepath.Join(ws, "new", "dir", "file.txt"),
		filepath.Join(ws, "src", "main.go"): filepath.Join(ws, "src", "main.go"), "src/../notes.txt": filepath.Join(ws, "notes.txt"),
	} {
		for name, locate := range locators(r) {
			if got, ok := locate(path); !ok || got != want {
				t.Errorf("%s(%q) = %q, %v; want %q", name, path, got, ok, want)
			}
		}
	}
	for _, path := range []string{
		"../x", "/etc/passwd", filepath.Join(outside, "secret.txt"), "src/../../x",
		"link-out/secret.txt", "link-out", "link-out/new.txt", "loop-a", "notes.txt/x",
		".local/share/bridle/bridle.db", filepath.Join(data, "bridle.db"), "link-db", "link-data/bridle.db", "src/up-data",
		".ssh/id_ed25519", ssh, "link-ssh/id_ed25519", ".ssh/new_key", "link-ssh/new_key",
	} {
		for name, locate := range locators(r) {
			if got, ok := locate(path); ok {
				t.Errorf("%s(%q) = %q: a location for what the tools refuse", name, path, got)
			}
		}
	}
}

// locators are the ways to locate a path: Root.Locate, and a Locator
// asked twice (the second answer is the one it kept).
func locators(r *Root) map[string]func(string) (string, bool) {
	l := r.Locator()
	return map[string]func(string) (string, bool){
		"Locate": r.Locate,
		"Locator.Locate": func(p string) (string, bool) {
			abs, ok := l.Locate(p)
			if again, okAgain := l.Locate(p); again != abs || okAgain != ok {
				return "asked again: " + again, okAgain
			}
			return abs, ok
		},
	}
}

// TestLocatorIsForOneReplay: a file located, then swapped for a link out
// of the workspace, is refused by the next Locator (the next replay, the
// next commit's cards).
func TestLocatorIsForOneReplay(t *testing.T) {
	r, ws, _, _, _ := hiddenRoot(t)
	outside := t.TempDir()
	testfs.Write(t, filepath.Join(outside, "secret.txt"), "x\n")
	testfs.Write(t, filepath.Join(ws, "swapped.txt"), "x\n")
	if _, ok := r.Locator().Locate("swapped.txt"); !ok {
		t.Fatal("swapped.txt is not located before the swap")
	}
	must(t, os.Remove(filepath.Join(ws, "swapped.txt")))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "swapped.txt")))
	if got, ok := r.Locator().Locate("swapped.txt"); ok {
		t.Errorf("a new Locator locates %q, now a link out of the workspace", got)
	}
}

// TestRootWalks: both trees list the regular files, skipping .git,
// ignored files, hidden paths (by name and by identity), special files
// and symbolic links; Read refuses hard-linked and oversized files.
func TestRootWalks(t *testing.T) {
	r, ws, data, _, _ := hiddenRoot(t)
	testfs.Write(t, filepath.Join(ws, ".git", "HEAD"), "ref\n")
	testfs.Write(t, filepath.Join(ws, ".gitignore"), "*.log\n")
	testfs.Write(t, filepath.Join(ws, "build.log"), "ignored\n")
	testfs.Write(t, filepath.Join(ws, "big.txt"), strings.Repeat("x", 100)+"\n")
	must(t, os.Link(filepath.Join(ws, "notes.txt"), filepath.Join(ws, "twin.txt")))
	must(t, syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644))
	must(t, os.Rename(data, filepath.Join(ws, "moved"))) // hidden by identity now
	want := []string{"big.txt", "notes.txt", "src/main.go", "twin.txt"}

	trees := map[string]func() Tree{
		"OpenTree": func() Tree {
			tree, err := r.OpenTree(".")
			must(t, err)
			return tree
		},
		"fsTree": func() Tree {
			sr, err := r.openRoot(".")
			must(t, err)
			return newFSTree(sr, "", nil, newWalkGuard(r.guard(), ws))
		},
	}
	for name, open := range trees {
		t.Run(name, func(t *testing.T) {
			got, err := walk(t, open(), 50)
			must(t, err)
			var rels []string
			for rel := range got {
				rels = append(rels, rel)
			}
			sort.Strings(rels)
			if name == "fsTree" {
				// Built here without the workspace's .gitignore rules.
				rels = slices.DeleteFunc(rels, func(s string) bool { return s == "build.log" || s == ".gitignore" })
			} else {
				rels = slices.DeleteFunc(rels, func(s string) bool { return s == ".gitignore" })
			}
			if !slices.Equal(rels, want) {
				t.Fatalf("walked %v, want %v", rels, want)
			}
			if !errors.Is(got["big.txt"], ErrTooLarge) || !errors.Is(got["twin.txt"], ErrLinked) || got["src/main.go"] != nil {
				t.Fatalf("reads: %v", got)
			}
			// The directories walked are told, those skipped are not, and
			// the first error from dir ends the walk.
			tree := open()
			defer tree.Close()
			var dirs []string
			err = tree.WalkDirs(context.Background(), func(rel string) error { dirs = append(dirs, rel); return nil }, func(File) error { return nil })
			must(t, err)
			sort.Strings(dirs)
			if want := []string{".config", ".local", ".local/share", "src"}; !slices.Equal(dirs, want) {
				t.Fatalf("WalkDirs went into %v, want %v", dirs, want)
			}
			stop := errors.New("enough")
			files := 0
			err = tree.WalkDirs(context.Background(), func(string) error { return stop }, func(File) error { files++; return nil })
			if !errors.Is(err, stop) || files == len(want) {
				t.Fatalf("WalkDirs went on after dir said stop: %v, %d files", err, files)
			}
		})
	}
	if _, err := r.OpenTree("moved"); !errors.Is(err, ErrHiddenPath) {
		t.Fatalf("OpenTree of a renamed hidden directory: %v", err)
	}
}

// TestRootSpecialFiles: a named pipe or a socket where a file is expected
// is refused at once, never opened to block.
func TestRootSpecialFiles(t *testing.T) {
	ws := t.TempDir()
	must(t, syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644))
	ln, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatalf("a Unix socket to test with: %v", err)
	}
	defer ln.Close()
	r := openRoot(t, ws)
	for _, name := range []string{"pipe", "sock"} {
		for _, o := range ops {
			t.Run(name+"/"+o.name, func(t *testing.T) {
				done := make(chan error, 1)
				go func() { done <- o.do(r, name) }()
				select {
				case err = <-done:
				case <-time.After(time.Minute):
					// A hang guard, not a timing assertion.
					t.Fatalf("%s on a %s has not returned after a minute: it blocks", o.name, name)
				}
				want := "not a regular file"
				if o.name == "ReadDir" || o.name == "OpenTree" {
					want = "not a "
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("%s on %s: %v", o.name, name, err)
				}
			})
		}
	}
}

// Remove refuses a hidden file by any name (through a link to a hidden
// directory too) and leaves it in place; it removes a workspace file, is
// quiet about a missing one, and refuses a directory.
func TestRootRemove(t *testing.T) {
	r, ws, _, _, _ := hiddenRoot(t)
	for _, p := range []string{".local/share/bridle/bridle.db", "link-data/bridle.db", "src/up-data/bridle.db",
		".config/bridle/settings.json", ".ssh/id_ed25519", "link-ssh/id_ed25519"} {
		before, _ := os.Stat(filepath.Join(ws, p))
		if err := r.Remove(p); !errors.Is(err, ErrHiddenPath) {
			t.Errorf("Remove %s: %v, want a hidden-path refusal", p, err)
		}
		if after, err := os.Stat(filepath.Join(ws, p)); before != nil && (err != nil || !os.SameFile(before, after)) {
			t.Errorf("Remove %s took the hidden file away (%v)", p, err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "src", "made.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("src/made.txt"); err != nil {
		t.Fatalf("Remove src/made.txt: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "src", "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("src/made.txt is still there (%v)", err)
	}
	if err := r.Remove("src/made.txt"); err != nil {
		t.Fatalf("Remove of a missing file: %v", err)
	}
	if err := r.Remove("src"); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("Remove of a directory: %v", err)
	}
}

// TestRootRemoveEmptyDir: only an empty directory made since the given
// time goes; never the workspace, a link, a hidden directory or one that
// was there before.
func TestRootRemoveEmptyDir(t *testing.T) {
	r, ws, _, _, _ := hiddenRoot(t)
	old := filepath.Join(ws, "old-empty")
	must(t, os.Mkdir(old, 0o755))
	since := time.Now()
	// Birth times are whole clock ticks; the directories below are made
	// after since, as a command's are after the prompt it answers.
	for !time.Now().After(since.Add(10 * time.Millisecond)) {
		runtime.Gosched()
	}
	must(t, os.MkdirAll(filepath.Join(ws, "made", "full"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "made", "full", "f"), []byte("x"), 0o644))
	must(t, os.Mkdir(filepath.Join(ws, "made-empty"), 0o755))
	must(t, os.Symlink(filepath.Join(ws, "made-empty"), filepath.Join(ws, "made-link")))
	cases := []struct {
		path    string
		removed bool
		hidden  bool
	}{
		{path: "made-empty", removed: true},
		{path: "made/full"},
		{path: "old-empty"},
		{path: "made-link"},
		{path: "."},
		{path: "missing"},
		{path: ".ssh", hidden: true},
	}
	for _, c := range cases {
		removed, err := r.RemoveEmptyDir(c.path, since)
		if c.hidden != errors.Is(err, ErrHiddenPath) || !c.hidden && err != nil {
			t.Errorf("RemoveEmptyDir %s: %v", c.path, err)
		}
		if removed != c.removed {
			t.Errorf("RemoveEmptyDir %s removed %v, want %v", c.path, removed, c.removed)
		}
	}
	for _, p := range []string{"made/full/f", "old-empty", "made-link", ".ssh"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err != nil {
			t.Errorf("%s went: %v", p, err)
		}
	}
}

// TestRootRefusesAMovedWorkspace: once the workspace directory's name no
// longer leads to the directory the Root opened (renamed away, and a link
// or another directory put in its place, or its parent renamed and
// linked elsewhere), every use of the Root is refused with ErrMoved,
// although its handle still reaches the directory (which keeps a file of
// the same name): the editor and the box are given the path by name. Put
// back, the Root works again.
func TestRootRefusesAMovedWorkspace(t *testing.T) {
	for _, tc := range []struct {
		name          string
		repoint, back func(base string) error
	}{
		{"renamed, a link in its place",
			func(b string) error { return moveAndPut(b, "work/proj", "link", filepath.Join(b, "outside")) },
			func(b string) error { return putBack(b, "work/proj") }},
		{"renamed, nothing in its place",
			func(b string) error {
				return os.Rename(filepath.Join(b, "work/proj"), filepath.Join(b, "work/proj.old"))
			},
			func(b string) error {
				return os.Rename(filepath.Join(b, "work/proj.old"), filepath.Join(b, "work/proj"))
			}},
		{"renamed, another directory in its place",
			func(b string) error { return moveAndPut(b, "work/proj", "dir", "") },
			func(b string) error { return putBack(b, "work/proj") }},
		{"its parent renamed, a link in its place",
			func(b string) error { return moveAndPut(b, "work", "link", filepath.Join(b, "up")) },
			func(b string) error { return putBack(b, "work") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			testfs.WriteTree(t, base, map[string]string{
				"work/proj/a.txt": "inside\n", "work/proj/src/b.txt": "inside\n",
				"outside/a.txt": "outside\n", "up/proj/a.txt": "outside\n",
			})
			ws := filepath.Join(base, "work", "proj")
			r := openRoot(t, ws)
			f, opened, err := r.Open("a.txt")
			must(t, err)
			f.Close()
			must(t, tc.repoint(base))
			uses := map[string]func() error{
				"Open":      func() error { _, _, err := r.Open("a.txt"); return err },
				"Lstat":     func() error { _, err := r.Lstat("a.txt"); return err },
				"ReadDir":   func() error { _, err := r.ReadDir("."); return err },
				"OpenTree":  func() error { _, err := r.OpenTree("."); return err },
				"WriteFile": func() error { return r.WriteFile("src/new.txt", []byte("x")) },
				"Remove":    func() error { return r.Remove("a.txt") },
				"CheckDirs": r.CheckDirs,
				"EditorPath": func() error {
					_, err := r.EditorPath("a.txt", opened)
					return err
				},
				"NewFileEditorPath": func() error {
					_, err := r.NewFileEditorPath("src/made.txt", false)
					return err
				},
			}
			for name, use := range uses {
				if err := use(); !errors.Is(err, ErrMoved) {
					t.Errorf("%s with the workspace moved: %v, want ErrMoved", name, err)
				} else if !strings.Contains(err.Error(), ws+" was moved or replaced") {
					t.Errorf("%s: %q does not say which directory moved", name, err)
				}
			}
			if p, ok := r.Locate("a.txt"); ok {
				t.Errorf("Locate gave %s with the workspace moved", p)
			}
			must(t, tc.back(base))
			for name, use := range uses {
				if name == "Remove" {
					continue
				}
				if err := use(); err != nil {
					t.Errorf("%s once put back: %v", name, err)
				}
			}
		})
	}
}

// moveAndPut renames base/name to name.old and puts a symbolic link to
// target, or an empty directory, in its place.
func moveAndPut(base, name, what, target string) error {
	p := filepath.Join(base, name)
	if err := os.Rename(p, p+".old"); err != nil {
		return err
	}
	if what == "link" {
		return os.Symlink(target, p)
	}
	return os.Mkdir(p, 0o755)
}

// putBack undoes moveAndPut.
func putBack(base, name string) error {
	p := filepath.Join(base, name)
	if err := os.Remove(p); err != nil {
		return err
	}
	return os.Rename(p+".old", p)
}

// TestEditorPathRefusesAnotherFile: the editor is given a path only while
// it leads, by name, to the file the Root opened: a file renamed over it
// since (by something outside the box: commands are kept out while the
// editor is asked), or a link put in its place, is refused.
func TestEditorPathRefusesAnotherFile(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{"a.txt": "inside\n", "b.txt": "other\n", "c.txt": "inside\n"})
	testfs.Write(t, filepath.Join(outside, "x.txt"), "outside\n")
	r := openRoot(t, ws)
	opened := map[string]os.FileInfo{}
	for _, p := range []string{"a.txt", "c.txt"} {
		f, fi, err := r.Open(p)
		must(t, err)
		f.Close()
		opened[p] = fi
	}
	if abs, err := r.EditorPath("a.txt", opened["a.txt"]); err != nil || abs != filepath.Join(ws, "a.txt") {
		t.Fatalf("EditorPath of an unchanged file: %q, %v", abs, err)
	}
	must(t, os.Rename(filepath.Join(ws, "b.txt"), filepath.Join(ws, "a.txt")))
	must(t, os.Remove(filepath.Join(ws, "c.txt")))
	must(t, os.Symlink(filepath.Join(outside, "x.txt"), filepath.Join(ws, "c.txt")))
	for _, p := range []string{"a.txt", "c.txt"} {
		if abs, err := r.EditorPath(p, opened[p]); err == nil || !strings.Contains(err.Error(), "no longer leads to the file bridle checked") {
			t.Errorf("EditorPath(%s) after the file was replaced: %q, %v", p, abs, err)
		}
	}
}

// TestNewFileEditorPath: the editor is given the path of a file to create
// only under a directory that leads, by name, to the one the Root checked,
// not hidden, and for a name still free (a link in its place, even one
// that leads nowhere, is the editor's to follow); the directory is made
// only when asked.
func TestNewFileEditorPath(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	testfs.WriteTree(t, ws, map[string]string{"a.txt": "inside\n", "sub/b.txt": "inside\n", "secret/k.txt": "key\n"})
	must(t, os.Symlink(filepath.Join(outside, "gone.txt"), filepath.Join(ws, "dangling.txt")))
	r := openRoot(t, ws)
	r.Hide(filepath.Join(ws, "secret"))
	tests := []struct {
		path    string
		mkdirs  bool
		want    string // the path given, or else
		wantErr string
	}{
		{path: "new.txt", want: filepath.Join(ws, "new.txt")},
		{path: "sub/new.txt", want: filepath.Join(ws, "sub/new.txt")},
		{path: "d/e/new.txt", wantErr: "no such file"},
		{path: "d/e/new.txt", mkdirs: true, want: filepath.Join(ws, "d/e/new.txt")},
		{path: "a.txt", wantErr: "exists now"},
		{path: "dangling.txt", wantErr: "exists now"},
		{path: "secret/new.txt", mkdirs: true, wantErr: "hidden"},
		{path: "../out.txt", wantErr: "outside"},
	}
	for _, tt := range tests {
		got, err := r.NewFileEditorPath(tt.path, tt.mkdirs)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewFileEditorPath(%s, %v) = %q, %v; want an error saying %q", tt.path, tt.mkdirs, got, err, tt.wantErr)
			}
		case err != nil || got != tt.want:
			t.Errorf("NewFileEditorPath(%s, %v) = %q, %v; want %q", tt.path, tt.mkdirs, got, err, tt.want)
		}
	}
	// The directory swapped for a link to one outside after it was made.
	sub := filepath.Join(ws, "sub")
	must(t, os.Rename(sub, sub+".old"))
	must(t, os.Symlink(outside, sub))
	if got, err := r.NewFileEditorPath("sub/new.txt", false); err == nil {
		t.Errorf("NewFileEditorPath through a directory swapped for a link out: %q", got)
	}
}
