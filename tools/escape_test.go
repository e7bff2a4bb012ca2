package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// TestPathEscapes tries every way out of the workspace with every tool
// that takes a path: each must be refused with an error naming the path
// and the workspace, and nothing outside may change.
func TestPathEscapes(t *testing.T) {
	env := testEnv(t)
	ws := env.Root.Dir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	testfs.Write(t, secret, "OUTSIDE-CONTENT\n")
	testfs.Write(t, filepath.Join(outside, "dir", "f.txt"), "OUTSIDE-CONTENT\n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, filepath.Join(ws, "link-file")))
	must(os.Symlink(filepath.Join(outside, "dir"), filepath.Join(ws, "link-dir")))
	must(os.Symlink("loop-b", filepath.Join(ws, "loop-a")))
	must(os.Symlink("loop-a", filepath.Join(ws, "loop-b")))
	must(os.Symlink("/proc/self/root"+outside, filepath.Join(ws, "proc-link")))
	must(os.Link(secret, filepath.Join(ws, "hard-link")))
	rel, _ := filepath.Rel(ws, secret)

	paths := map[string]string{
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
	}
	type use struct {
		tool, input string
	}
	uses := func(p string) []use {
		q, _ := json.Marshal(p)
		return []use{
			{"read_file", fmt.Sprintf(`{"path": %s}`, q)},
			{"write_file", fmt.Sprintf(`{"path": %s, "content": "PWNED"}`, q)},
			{"edit_file", fmt.Sprintf(`{"path": %s, "old_string": "OUTSIDE", "new_string": "PWNED"}`, q)},
			{"list_dir", fmt.Sprintf(`{"path": %s}`, q)},
			{"grep", fmt.Sprintf(`{"pattern": "OUTSIDE", "path": %s}`, q)},
			{"glob", fmt.Sprintf(`{"pattern": "*", "path": %s}`, q)},
		}
	}
	for name, p := range paths {
		for _, u := range uses(p) {
			t.Run(name+"/"+u.tool, func(t *testing.T) {
				res := call(t, byName(u.tool), env, u.input)
				if strings.Contains(res.Output, "OUTSIDE-CONTENT") || strings.Contains(res.Output, "root:x:0") {
					t.Fatalf("read outside: %q", res.Output)
				}
				if !res.IsError {
					t.Fatalf("not refused: %q", res.Output)
				}
				if !strings.Contains(res.Output, ws) {
					t.Fatalf("error does not name the workspace %s: %q", ws, res.Output)
				}
				if !strings.Contains(res.Output, p) && !strings.Contains(res.Output, filepath.Base(p)) {
					t.Fatalf("error does not name the path %s: %q", p, res.Output)
				}
			})
		}
	}
	for _, f := range []string{secret, filepath.Join(outside, "dir", "f.txt")} {
		if b, _ := os.ReadFile(f); string(b) != "OUTSIDE-CONTENT\n" {
			t.Fatalf("%s changed: %q", f, b)
		}
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 2 {
		t.Fatalf("files appeared outside: %v", ents)
	}
}

// TestSymlinkSwapRace swaps a directory for a symlink to the outside while
// reads and writes go through it: no read may see the outside, no write
// may land there.
func TestSymlinkSwapRace(t *testing.T) {
	env := testEnv(t)
	ws := env.Root.Dir()
	outside := t.TempDir()
	testfs.Write(t, filepath.Join(outside, "f"), "OUTSIDE-CONTENT\n")
	d := filepath.Join(ws, "d")
	testfs.Write(t, filepath.Join(ws, "real", "f"), "inside\n")
	if err := os.Rename(filepath.Join(ws, "real"), d); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		// Flip d between the real directory and a link to outside.
		for !stop.Load() {
			os.Rename(d, filepath.Join(ws, "real"))
			os.Symlink(outside, d)
			time.Sleep(time.Microsecond)
			os.Remove(d)
			os.Rename(filepath.Join(ws, "real"), d)
		}
	})
	read, wrote := byName("read_file"), byName("write_file")
	deadline := time.Now().Add(2 * time.Second)
	n, refused := 0, 0
	for time.Now().Before(deadline) {
		res := read.Run(context.Background(), env, json.RawMessage(`{"path": "d/f"}`))
		if strings.Contains(res.Output, "OUTSIDE") {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("read through the swapped link: %q", res.Output)
		}
		if res.IsError {
			refused++
		}
		wrote.Run(context.Background(), env, json.RawMessage(`{"path": "d/f", "content": "PWNED\n"}`))
		n++
	}
	stop.Store(true)
	wg.Wait()
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "OUTSIDE-CONTENT\n" {
		t.Fatalf("write landed outside: %q", b)
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Fatalf("files appeared outside: %v", ents)
	}
	t.Logf("%d read/write rounds during the swap, %d reads refused", n, refused)
}

func TestAdditionalDirectories(t *testing.T) {
	main, extra, outside := t.TempDir(), t.TempDir(), t.TempDir()
	testfs.Write(t, filepath.Join(extra, "lib.txt"), "extra content\n")
	root, err := confine.OpenRoot(main, extra)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	env := &Env{Root: root}
	res := call(t, byName("read_file"), env, fmt.Sprintf(`{"path": %q}`, filepath.Join(extra, "lib.txt")))
	if res.IsError || !strings.Contains(res.Output, "extra content") {
		t.Fatalf("additional directory not readable: %q", res.Output)
	}
	res = call(t, byName("write_file"), env, fmt.Sprintf(`{"path": %q, "content": "x"}`, filepath.Join(outside, "x")))
	if !res.IsError || !strings.Contains(res.Output, main) || !strings.Contains(res.Output, extra) {
		t.Fatalf("outside write: %q", res.Output)
	}
}
