package lsp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/internal/lsptest"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

func TestMain(m *testing.M) {
	box.MaybeRunHelper()
	code := m.Run()
	lsptest.Cleanup()
	os.Exit(code)
}

// fake returns a manager whose only server is the test server, run with
// args, serving *.src files, and a workspace for it.
func fake(t *testing.T, wait float64, args ...string) (*Manager, string) {
	t.Helper()
	srv := map[string]any{"command": lsptest.Binary(t), "args": args, "files": []string{"*.src"}}
	raw, _ := json.Marshal(map[string]any{"wait_seconds": wait, "servers": map[string]any{"fake": srv}})
	b := box.New(box.Options{})
	t.Cleanup(func() { b.Close() })
	m := NewManager(Config{
		Box:      b,
		Settings: func(cwd string) *config.Config { return &config.Config{Cwd: cwd, Settings: config.Settings{LSP: raw}} },
		Env:      func() []string { return []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()} },
		CacheDir: t.TempDir(),
		Files: func(root string) (Files, error) {
			r, err := confine.OpenRoot(root)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
		Look:    func(string) (string, error) { return "", os.ErrNotExist },
		Timeout: 2 * time.Second,
	})
	t.Cleanup(m.Close)
	ws := t.TempDir()
	return m, ws
}

// edit writes a file of ws and tells the workspace, as edit_file does.
func edit(t *testing.T, w *Workspace, path, before, after string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(after), 0o644); err != nil {
		t.Fatal(err)
	}
	var b []byte
	if before != "\x00new" {
		b = []byte(before)
	}
	return w.Edited(context.Background(), path, b, []byte(after))
}

func says(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q does not say %q", what, got, w)
		}
	}
}

func saysNot(t *testing.T, what, got string, not ...string) {
	t.Helper()
	for _, w := range not {
		if strings.Contains(got, w) {
			t.Errorf("%s: %q says %q", what, got, w)
		}
	}
}

// TestEditsReportWhatTheyIntroduced: an edit's result gives the
// diagnostics the edit introduced, not what was broken before; fixing it
// reports none new; published and pulled diagnostics alike.
func TestEditsReportWhatTheyIntroduced(t *testing.T) {
	for name, args := range map[string][]string{"published": nil, "pulled": {"-pull"}} {
		t.Run(name, func(t *testing.T) {
			m, ws := fake(t, 30, args...)
			w := m.Workspace([]string{ws})
			a := filepath.Join(ws, "a.src")
			v1 := "ok\nBAD: old trouble\n"
			os.WriteFile(a, []byte(v1), 0o644)
			v2 := v1 + "WARN: a warning\nBAD: new trouble\n"
			got := edit(t, w, a, v1, v2)
			says(t, "the breaking edit", got, "lspserver: 2 new problems after this edit:", "a.src:4:1 error new trouble", "a.src:3:1 warning a warning")
			saysNot(t, "the breaking edit", got, "old trouble")
			if strings.Index(got, "error") > strings.Index(got, "warning") {
				t.Errorf("errors are not first: %q", got)
			}
			got = edit(t, w, a, v2, v1)
			says(t, "the fix", got, "lspserver: no new problems after this edit (1 in a.src from before, not repeated).")

			// A new file: all of it is new.
			b := filepath.Join(ws, "sub", "b.src")
			os.MkdirAll(filepath.Dir(b), 0o755)
			got = edit(t, w, b, "\x00new", "BAD: born broken\n")
			says(t, "a new file", got, "sub/b.src:1:1 error born broken")
		})
	}
}

// TestNoServerCostsNothing: a file no server serves, or whose server is
// not found, starts nothing and says nothing.
func TestNoServerCostsNothing(t *testing.T) {
	m, ws := fake(t, 30)
	w := m.Workspace([]string{ws})
	if got := edit(t, w, filepath.Join(ws, "main.go"), "", "package main\n"); got != "" {
		t.Fatalf("an edit no server serves says %q", got)
	}
	if len(m.entries) != 0 {
		t.Fatalf("servers were set up: %d", len(m.entries))
	}
	if _, err := os.Stat(filepath.Join(m.cfg.CacheDir, "lsp")); err == nil {
		t.Fatalf("a server's cache was made")
	}
}

// TestFaultyServers: a server that crashes, hangs, stops reading, floods
// or lies is cut off by the bounds: every edit's result comes within the
// wait, says what happened once, and the next edits go on.
func TestFaultyServers(t *testing.T) {
	tests := []struct {
		mode  []string
		wait  float64  // 3 s if 0
		first []string // what the first edit's result says
		not   []string
		// second is what the next edit, right after, says ("" : nothing
		// of the server).
		second []string
	}{
		{mode: []string{"-mode", "crash-start"}, first: []string{"lspserver could not start", "crashing at start, as asked", "starts it again on the next edit after 1s"},
			second: nil},
		{mode: []string{"-mode", "crash-mid-request", "-pull"}, first: []string{"lspserver stopped: exit status 3", "crashing mid-request, as asked"},
			second: nil},
		{mode: []string{"-mode", "crash-mid-request"}, first: []string{"lspserver stopped: exit status 3", "crashing mid-change, as asked"},
			second: nil},
		{mode: []string{"-mode", "hang"}, first: []string{"lspserver has not answered within 3s (it may still be loading the workspace); the diagnostics of this edit will come with a later edit's result."}},
		{mode: []string{"-mode", "hang", "-pull"}, first: []string{"lspserver has not answered within 3s"}},
		{mode: []string{"-mode", "deaf"}, first: []string{"lspserver"}},
		{mode: []string{"-mode", "huge", "-pull"}, first: []string{"no diagnostics for this edit", "cut off: a message of 104857", "over the 16777216-byte limit"}},
		{mode: []string{"-mode", "huge"}, first: []string{"lspserver: 1 new problem after this edit:", "a.src:2:1 error broken"}},
		{mode: []string{"-mode", "flood"}, wait: 60, first: []string{"new problems after this edit:", "… and ", "more"}},
		{mode: []string{"-mode", "wrong-versions"}, first: []string{"did not answer within 3s"}, not: []string{"never sent"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.mode, " "), func(t *testing.T) {
			m, ws := fake(t, cmp.Or(tt.wait, 3), tt.mode...)
			w := m.Workspace([]string{ws})
			a := filepath.Join(ws, "a.src")
			os.WriteFile(a, []byte("ok\n"), 0o644)
			got := edit(t, w, a, "ok\n", "ok\nBAD: broken\n")
			says(t, "the first edit", got, tt.first...)
			saysNot(t, "the first edit", got, tt.not...)
			if n := strings.Count(got, "\n"); n > maxLines+3 {
				t.Errorf("the result has %d lines", n)
			}
			if tt.second == nil && strings.Contains(tt.first[0], "could not start") || strings.Contains(tt.first[0], "stopped") {
				// Said once: the next edit, within the backoff, says nothing.
				if got := edit(t, w, a, "ok\nBAD: broken\n", "ok\n"); got != "" {
					t.Errorf("the next edit says %q; the failure was said already", got)
				}
			}
		})
	}
}

// TestLateDiagnosticsComeWithTheNextEdit: when the server does not
// answer within the wait, the result says so, and the next edit's
// result gives what the earlier edit introduced.
func TestLateDiagnosticsComeWithTheNextEdit(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "open")
	m, ws := fake(t, 1, "-gate", gate)
	w := m.Workspace([]string{ws})
	a := filepath.Join(ws, "a.src")
	os.WriteFile(a, []byte("ok\n"), 0o644)
	got := edit(t, w, a, "ok\n", "ok\nBAD: first break\n")
	// Still starting (a slow machine), or started and not answering.
	says(t, "the first edit", got, "the diagnostics of this edit will come with a later edit's result")
	os.WriteFile(gate, nil, 0o644)
	got = edit(t, w, a, "ok\nBAD: first break\n", "ok\nBAD: first break\nBAD: second break\n")
	says(t, "the second edit", got, "lspserver: 1 new problem after this edit:\na.src:3:1 error second break",
		"lspserver: 1 new problem after an earlier edit of a.src:\na.src:2:1 error first break")
}

// running returns the one server the manager runs.
func running(t *testing.T, m *Manager) *Server {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) != 1 {
		t.Fatalf("%d servers, want 1", len(m.entries))
	}
	for _, e := range m.entries {
		if srv := e.peek(); srv != nil {
			return srv
		}
	}
	t.Fatal("the server is not running")
	return nil
}

// TestServersAreSharedAndStopped: the sessions on one root share one
// server, which stops when idle, and on Close.
func TestServersAreSharedAndStopped(t *testing.T) {
	m, ws := fake(t, 30)
	a := filepath.Join(ws, "a.src")
	os.WriteFile(a, []byte("ok\n"), 0o644)
	one, two := m.Workspace([]string{ws}), m.Workspace([]string{ws})
	edit(t, one, a, "ok\n", "ok\nBAD: x\n")
	srv := running(t, m)
	got := edit(t, two, a, "ok\nBAD: x\n", "ok\n")
	says(t, "the other session's edit", got, "no new problems")
	if running(t, m) != srv {
		t.Fatal("the second session got a server of its own")
	}
	m.Close()
	select {
	case <-srv.proc.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the server's box outlived Close")
	}
	if got := edit(t, one, a, "ok\n", "ok\nBAD: y\n"); got != "" {
		t.Fatalf("an edit after Close says %q", got)
	}
}

func TestIdleServerStops(t *testing.T) {
	srvArgs := map[string]any{"command": lsptest.Binary(t), "files": []string{"*.src"}}
	raw, _ := json.Marshal(map[string]any{"idle_minutes": 0.002, "servers": map[string]any{"fake": srvArgs}})
	m, ws := fake(t, 30)
	m.cfg.Settings = func(cwd string) *config.Config { return &config.Config{Cwd: cwd, Settings: config.Settings{LSP: raw}} }
	a := filepath.Join(ws, "a.src")
	edit(t, m.Workspace([]string{ws}), a, "\x00new", "ok\n")
	srv := running(t, m)
	select {
	case <-srv.proc.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the idle server was not stopped")
	}
	m.mu.Lock()
	n := len(m.entries)
	m.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d servers left after the idle stop", n)
	}
}

// TestDiskChangesReachTheServer: what the watcher saw change on disk
// reaches a server that has the file open as its new text.
func TestDiskChangesReachTheServer(t *testing.T) {
	m, ws := fake(t, 30)
	a := filepath.Join(ws, "a.src")
	edit(t, m.Workspace([]string{ws}), a, "\x00new", "ok\n")
	srv := running(t, m)
	os.WriteFile(a, []byte("ok\nBAD: changed on disk\n"), 0o644)
	m.FilesChanged([]string{ws}, []string{a, filepath.Join(ws, "other.src")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, ok := srv.diags.wait(ctx, srv.Done(), a, 2)
	if !ok || len(f.items) != 1 || f.items[0].Message != "changed on disk" {
		t.Fatalf("the server has %+v (%v) for the file changed on disk", f, ok)
	}
}

// TestOpenFileTurnedIntoALinkOutIsClosed: a command that replaces a file
// the server has open by a link to a file outside the workspace (or a
// pipe, or a file too large) does not get that file's text read by
// bridle and sent to the server, whose diagnostics would quote it to the
// model: the document is closed instead. Through the watcher's batches
// and through a command's result alike.
func TestOpenFileTurnedIntoALinkOutIsClosed(t *testing.T) {
	const secret = "SECRET-KEY-MATERIAL"
	outside := filepath.Join(t.TempDir(), "id_rsa")
	os.WriteFile(outside, []byte("BAD: "+secret+"\n"), 0o600)
	for _, how := range []string{"watcher", "command"} {
		for name, replace := range map[string]func(a string) error{
			"link out": func(a string) error { return os.Symlink(outside, a) },
			"pipe":     mkfifo,
			"too large": func(a string) error {
				return os.WriteFile(a, []byte("BAD: "+secret+"\n"+strings.Repeat("x", maxSynced)), 0o644)
			},
		} {
			t.Run(how+"/"+name, func(t *testing.T) {
				m, ws := fake(t, 30)
				w := m.Workspace([]string{ws})
				a := filepath.Join(ws, "a.src")
				edit(t, w, a, "\x00new", "ok\n")
				srv := running(t, m)
				os.Remove(a)
				if err := replace(a); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				switch how {
				case "watcher":
					srv.filesChanged(ctx, []string{a}) // what changes() does with a batch
				case "command":
					saysNot(t, "the command's result", w.Changed(ctx, []string{a}), secret)
				}
				// A file opened after the change is answered after it:
				// by then whatever a.src was given has been answered too.
				b := filepath.Join(ws, "b.src")
				edit(t, w, b, "\x00new", "BAD: later\n")
				if f, ok := srv.diags.wait(ctx, srv.Done(), b, 1); !ok || len(f.items) != 1 {
					t.Fatalf("no diagnostics for b.src: %+v", f)
				}
				for _, it := range srv.diags.snapshot()[a].items {
					if strings.Contains(it.Message, secret) {
						t.Errorf("the server was given the outside file's text: %q", it.Message)
					}
				}
				if srv.docs.get(a) != nil {
					t.Errorf("a.src is still open in the server after it became unreadable")
				}
			})
		}
	}
}

// TestRequestCarriesAnyCall: a tool gets a file's server, gives it the
// file's text, and asks it anything; the server's errors come back as
// errors.
func TestRequestCarriesAnyCall(t *testing.T) {
	m, ws := fake(t, 30, "-pull")
	w := m.Workspace([]string{ws})
	ctx := context.Background()
	a := filepath.Join(ws, "a.src")
	srv, note, err := w.ServerFor(ctx, a)
	if err != nil || note != "" {
		t.Fatalf("ServerFor: %v %q", err, note)
	}
	if v, err := srv.Sync(ctx, a, []byte("BAD: asked\n")); err != nil || v != 1 {
		t.Fatalf("Sync: %d %v", v, err)
	}
	if v, _ := srv.Sync(ctx, a, []byte("BAD: asked\n")); v != 1 {
		t.Fatalf("the same text was sent again: version %d", v)
	}
	var res struct {
		Kind  string                `json:"kind"`
		Items []protocol.Diagnostic `json:"items"`
	}
	doc := map[string]any{"textDocument": protocol.TextDocumentIdentifier{URI: protocol.DocumentURI(uri.File(a))}}
	if err := srv.Request(ctx, "textDocument/diagnostic", doc, &res); err != nil || len(res.Items) != 1 || res.Items[0].Message != "asked" {
		t.Fatalf("textDocument/diagnostic: %+v %v", res, err)
	}
	if err := srv.Request(ctx, protocol.MethodTextDocumentHover, doc, nil); err == nil || !strings.Contains(err.Error(), "not handled") {
		t.Fatalf("a method the server does not handle: %v", err)
	}
	if _, _, err := w.ServerFor(ctx, filepath.Join(ws, "main.go")); !errors.Is(err, ErrNoServer) {
		t.Fatalf("a file no server serves: %v", err)
	}
}

// TestNoServerWhereTheBoxCannotKeepIt: on a machine whose box would not
// keep a server in (no Landlock nor read-only root, no network
// namespace, hidden paths not hidden), no server starts on an edit, the
// result says why, and the code tools are not offered.
func TestNoServerWhereTheBoxCannotKeepIt(t *testing.T) {
	m, ws := fake(t, 5)
	m.cfg.Unconfined = func() string { return "commands can write anywhere this user can" }
	w := m.Workspace([]string{ws})
	os.WriteFile(filepath.Join(ws, "a.src"), []byte("ok\n"), 0o644)
	if w.Offered() {
		t.Error("the code tools are offered where no server may start")
	}
	got := edit(t, w, filepath.Join(ws, "a.src"), "ok\n", "BAD: trouble\n")
	says(t, "the edit", got, "language servers do not run on this machine", "commands can write anywhere this user can")
	saysNot(t, "the edit", got, "error trouble")
}
