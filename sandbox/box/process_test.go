//go:build linux

package box

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startMarked starts script (sh -c) as a long-lived process in b, all of
// its processes carrying a unique variable, with ws readable and a
// private directory; the test fails if any of them outlives Close.
func startMarked(t *testing.T, b *Box, ws, script string, tweak func(*Spec)) (*Process, *capped) {
	t.Helper()
	mark := fmt.Sprintf("BRIDLE_TEST_MARK=%d-%d", os.Getpid(), time.Now().UnixNano())
	stderr := &capped{max: 1 << 20}
	s := Spec{Args: []string{"/bin/sh", "-c", script}, Dir: ws, Private: t.TempDir(), Output: stderr,
		MemoryBytes: 1 << 30, Processes: 100, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "WS=" + ws, mark}}
	if tweak != nil {
		tweak(&s)
	}
	s.Env = append(s.Env, "PRIVATE="+s.Private)
	p, err := b.Start(context.Background(), s)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		p.Close()
		if left := survivors(mark); len(left) > 0 {
			t.Errorf("processes survived Close: %v (stderr %q)", left, stderr.String())
		}
	})
	return p, stderr
}

// readUntil reads the process's stdout up to a line equal to end, or
// until it ends.
func readUntil(t *testing.T, p *Process, end string) string {
	t.Helper()
	p.Stdout.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	sc := bufio.NewScanner(p.Stdout)
	for sc.Scan() {
		if sc.Text() == end {
			return b.String()
		}
		b.WriteString(sc.Text() + "\n")
	}
	// How it ended says why (a signal, a cap, the box's own failure): a
	// flake seen once under load ended with nothing on stdout or stderr.
	t.Fatalf("the process ended before %q (%v): %q; it ended: %s", end, sc.Err(), b.String(), p.Close().Summary(0))
	return ""
}

// TestProcessSpeaksOnPipes: a long-lived process reads its stdin and
// writes its stdout through pipes, its stderr apart; Close kills it and
// every process it started, whole, and says how it ended.
func TestProcessSpeaksOnPipes(t *testing.T) {
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			ws := t.TempDir()
			p, stderr := startMarked(t, b, ws, `echo to-stderr >&2; (setsid sleep 1000 &); sleep 1000 & exec cat`, nil)
			fmt.Fprintln(p.Stdin, "hello")
			fmt.Fprintln(p.Stdin, "end")
			if got := readUntil(t, p, "end"); got != "hello\n" {
				t.Fatalf("stdout %q, want the line echoed", got)
			}
			p.Close()
			if !strings.Contains(stderr.String(), "to-stderr") {
				t.Errorf("stderr %q", stderr.String())
			}
			select {
			case <-p.Done():
			default:
				t.Fatal("Done is not closed after Close")
			}
		})
	}
}

// TestProcessEndsByItself: a process that exits has its box released,
// and its outcome says how it ended; stdout reaches EOF.
func TestProcessEndsByItself(t *testing.T) {
	b := New(Options{})
	p, _ := startMarked(t, b, t.TempDir(), `echo bye; exit 3`, nil)
	if got := readUntil(t, p, "bye"); got != "" {
		t.Fatalf("stdout %q", got)
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the box was not released after its process exited")
	}
	if o := p.Outcome(); o.ExitCode != 3 {
		t.Fatalf("outcome %+v, want exit status 3", o)
	}
}

// TestProcessPromises: a server is confined as a command is, but the
// workspace is not its to write: each attempt to get out must fail, seen
// both from inside (what it reports) and from outside (what is left).
// Each layer that keeps a promise alone is tried alone, and each attempt
// is also made with every layer off, where the check must see it succeed:
// a check that could not tell would prove nothing.
func TestProcessPromises(t *testing.T) {
	if !hasTool("curl") || !hasTool("python3") {
		t.Fatal("curl and python3 are needed for this test (apt-get install curl python3)")
	}
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE-KEY-CANARY"), 0o600)
	cache := filepath.Join(home, ".cache", "bridle")
	os.MkdirAll(cache, 0o700)
	os.WriteFile(filepath.Join(cache, "fs.lock"), []byte("BRIDLE-CACHE-CANARY"), 0o600)
	private := filepath.Join(cache, "lsp", "go-1")
	os.MkdirAll(private, 0o700)
	hidden := []string{filepath.Join(home, ".ssh"), cache}

	// seen is what a check looks at: the workspace, what the server
	// printed, the host's listener.
	type seen struct {
		ws, out string
		host    *listener
	}
	type attempt struct {
		name   string
		boxes  map[string]Options // the boxes it is tried in: each must hold
		script string
		tweak  func(*Spec)
		// escaped says what got out ("" for nothing).
		escaped func(s seen) string
	}
	attempts := []attempt{
		{
			name:   "write the workspace",
			boxes:  map[string]Options{"all": {}, "landlock alone": {NoNamespaces: true}, "read-only mounts alone": {NoLandlock: true}},
			script: `echo pwned > "$WS/main.go"; echo "write=$?"; touch "$WS/new"; echo "create=$?"`,
			escaped: func(s seen) string {
				if got, _ := os.ReadFile(filepath.Join(s.ws, "main.go")); string(got) != "package main\n" {
					return "main.go was rewritten: " + string(got)
				}
				if _, err := os.Stat(filepath.Join(s.ws, "new")); err == nil {
					return "a file was created"
				}
				return ""
			},
		},
		{
			name:   "read ~/.ssh and bridle's cache",
			boxes:  map[string]Options{"all": {}},
			script: `cat "$HOME/.ssh/id_ed25519"; cat "$HOME/.cache/bridle/fs.lock"; ls -a "$HOME/.cache/bridle" | sed 's/^/entry:/'`,
			tweak:  func(s *Spec) { s.Hidden = hidden },
			escaped: func(s seen) string {
				for _, c := range []string{"PRIVATE-KEY-CANARY", "BRIDLE-CACHE-CANARY", "entry:fs.lock"} {
					if strings.Contains(s.out, c) {
						return "read " + c
					}
				}
				return ""
			},
		},
		{
			name:  "write beside its own cache, inside the hidden cache",
			boxes: map[string]Options{"all": {}},
			script: `echo cached > "$PRIVATE/index"; echo "private=$?"; ls "$HOME/.cache/bridle" | sed 's/^/entry:/'; ` +
				`echo x > "$HOME/.cache/bridle/evil"; echo "sibling=$?"`,
			tweak: func(s *Spec) { s.Hidden, s.Private = hidden, private },
			escaped: func(s seen) string {
				if _, err := os.Stat(filepath.Join(cache, "evil")); err == nil {
					os.Remove(filepath.Join(cache, "evil"))
					return "wrote beside its cache"
				}
				if strings.Contains(s.out, "entry:fs.lock") {
					return "saw the rest of bridle's cache"
				}
				return ""
			},
		},
		{
			name:   "reach the network",
			boxes:  map[string]Options{"all": {}, "without namespaces": {NoNamespaces: true}},
			script: `curl -sS -m 3 "http://127.0.0.1:$PORT/"; echo "loopback=$?"; curl -sS -m 3 http://192.0.2.1/; echo "public=$?"`,
			escaped: func(s seen) string {
				if n := s.host.accepted.Load(); n != 0 {
					return fmt.Sprintf("the host's listener accepted %d connections", n)
				}
				return ""
			},
		},
		{
			name:  "fork bomb",
			boxes: map[string]Options{"all": {}},
			// The bomb forks until it cannot, in a subshell; the shell
			// then counts the box's processes without forking.
			script: `(i=0; while [ $i -lt 300 ]; do sleep 1000 & i=$((i+1)); done) 2>/dev/null; set -- /proc/[0-9]*; echo "running=$#"`,
			tweak:  func(s *Spec) { s.Processes = 50 },
			escaped: func(s seen) string {
				var n int
				if i := strings.Index(s.out, "running="); i >= 0 {
					fmt.Sscan(s.out[i+len("running="):], &n)
				}
				if n > 60 {
					return fmt.Sprintf("%d processes under a cap of 50", n)
				}
				return ""
			},
		},
		{
			name:   "memory",
			boxes:  map[string]Options{"all": {}},
			script: `python3 -c "b = [bytearray(16 << 20) for _ in range(64)]; print('allocated')"`,
			tweak:  func(s *Spec) { s.MemoryBytes = 256 << 20 },
			escaped: func(s seen) string {
				if strings.Contains(s.out, "allocated") {
					return "allocated 1 GiB under a 256 MiB limit"
				}
				return ""
			},
		},
	}
	// unconfined is the control: every layer off, no limits.
	unconfined := Options{NoNamespaces: true, NoLandlock: true, NoSeccomp: true, NoCgroup: true}
	for _, a := range attempts {
		a.boxes["control, every layer off"] = unconfined
		for name, opts := range a.boxes {
			t.Run(a.name+"/"+name, func(t *testing.T) {
				b := New(opts)
				defer b.Close()
				host := hostListener(t)
				ws := t.TempDir()
				os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644)
				tweak := func(s *Spec) {
					s.Env = append(s.Env, "HOME="+home, fmt.Sprintf("PORT=%d", host.port()))
					if a.tweak != nil {
						a.tweak(s)
					}
					if opts == unconfined {
						s.Processes, s.MemoryBytes = 0, 0
					}
				}
				p, stderr := startMarked(t, b, ws, a.script+"; echo attempted; exec cat", tweak)
				out := readUntil(t, p, "attempted")
				p.Close()
				got := a.escaped(seen{ws: ws, out: out + stderr.String(), host: host})
				switch {
				case opts == unconfined && got == "":
					t.Errorf("with every layer off the attempt did not get out, so this test cannot tell: %q", out)
				case opts != unconfined && got != "":
					t.Errorf("the server got out: %s (%q)", got, out)
				}
			})
		}
	}
}

// TestProcessOwnCache: a server's private directory inside bridle's
// hidden cache is its to write, and it alone is visible there.
func TestProcessOwnCache(t *testing.T) {
	b := New(Options{})
	requireLayer(t, b, "mount namespace")
	cache := t.TempDir()
	os.WriteFile(filepath.Join(cache, "fs.lock"), []byte("x"), 0o600)
	private := filepath.Join(cache, "lsp", "go-1")
	os.MkdirAll(private, 0o700)
	p, _ := startMarked(t, b, t.TempDir(), `echo cached > "$PRIVATE/index"; echo "private=$?"; ls "$PRIVATE/../.." | sed 's/^/entry:/'; echo done; exec cat`,
		func(s *Spec) { s.Hidden, s.Private = []string{cache}, private })
	out := readUntil(t, p, "done")
	if got, _ := os.ReadFile(filepath.Join(private, "index")); string(got) != "cached\n" || !strings.Contains(out, "private=0") {
		t.Fatalf("the server could not write its own cache: %q (%q)", got, out)
	}
	if out != "private=0\nentry:lsp\n" {
		t.Fatalf("the server sees %q of the hidden cache, want only the way to its own", out)
	}
}

// TestProcessNeedsAProgram: Start refuses what it cannot confine.
func TestProcessNeedsAProgram(t *testing.T) {
	b := New(Options{})
	for _, s := range []Spec{
		{Args: []string{"sh", "-c", "true"}, Dir: "/tmp", Private: t.TempDir()},
		{Args: []string{"/bin/true"}, Dir: "/tmp"},
		{Dir: "/tmp", Private: t.TempDir()},
	} {
		if p, err := b.Start(context.Background(), s); err == nil {
			p.Close()
			t.Errorf("Start(%+v) started", s)
		}
	}
}

// TestProcessWhoseBoxFails: a box that cannot be set up (a private
// directory holding a hidden path) is an error from Start, not a
// process that dies unexplained.
func TestProcessWhoseBoxFails(t *testing.T) {
	b := New(Options{})
	requireLayer(t, b, "mount namespace")
	private := t.TempDir()
	os.MkdirAll(filepath.Join(private, "secret"), 0o700)
	_, err := b.Start(context.Background(), Spec{Args: []string{"/bin/cat"}, Dir: t.TempDir(), Private: private,
		Hidden: []string{filepath.Join(private, "secret")}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err == nil || !strings.Contains(err.Error(), "private directory") {
		t.Fatalf("Start: %v, want the box's reason", err)
	}
}
