//go:build unix

package tools

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// TestSpecialFilesRefused: a named pipe (or a socket) where the model
// expects a file would block a plain open or read forever, and with it the
// turn, cancel and shutdown. Every file tool refuses it at once, and the
// walks skip it.
func TestSpecialFilesRefused(t *testing.T) {
	env := testEnv(t)
	ws := env.Root.Dir()
	testfs.Write(t, filepath.Join(ws, "ok.txt"), "needle\n")
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	ln, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatalf("a Unix socket to test with: %v", err)
	}
	defer ln.Close()
	for _, name := range []string{"pipe", "sock"} {
		for _, tc := range []struct{ tool, input, want string }{
			{"read_file", `{"path": "NAME"}`, "not a regular file"},
			{"edit_file", `{"path": "NAME", "old_string": "a", "new_string": "b"}`, "not a regular file"},
			{"write_file", `{"path": "NAME", "content": "x"}`, "not a regular file"},
			{"list_dir", `{"path": "NAME"}`, "not a "},
			{"grep", `{"pattern": "needle"}`, "ok.txt"},
			{"glob", `{"pattern": "*"}`, "ok.txt"},
			{"grep", `{"pattern": "needle", "path": "NAME"}`, "not a "},
			{"glob", `{"pattern": "*", "path": "NAME"}`, "not a "},
		} {
			t.Run(name+"/"+tc.tool, func(t *testing.T) {
				done := make(chan Result, 1)
				go func() { done <- call(t, byName(tc.tool), env, strings.ReplaceAll(tc.input, "NAME", name)) }()
				var res Result
				select {
				case res = <-done:
				case <-time.After(time.Minute):
					// A hang guard, not a timing assertion: the call never returns.
					t.Fatalf("%s on a %s has not returned after a minute: it blocks", tc.tool, name)
				}
				if !strings.Contains(res.Output, tc.want) {
					t.Fatalf("%s on %s: %q", tc.tool, name, res.Output)
				}
			})
		}
	}
}
