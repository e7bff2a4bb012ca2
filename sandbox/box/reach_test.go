//go:build linux

package box

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waitWriter is an output sink that signals when what it holds contains
// a text.
type waitWriter struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func newWaitWriter() *waitWriter { return &waitWriter{changed: make(chan struct{})} }

func (w *waitWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

// waitFor waits until the output contains each of texts, or the command
// ended (done), or a minute has passed.
func (w *waitWriter) waitFor(t testing.TB, done <-chan struct{}, texts ...string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		w.mu.Lock()
		s, changed := w.b.String(), w.changed
		w.mu.Unlock()
		all := true
		for _, text := range texts {
			all = all && strings.Contains(s, text)
		}
		if all {
			return
		}
		select {
		case <-changed:
		case <-done:
			t.Fatalf("the server ended before it said %q: %q", texts, s)
		case <-timeout:
			t.Fatalf("the server did not say %q within a minute: %q", texts, s)
		}
	}
}

// serving runs command in a box that serves its loopback, until the
// test ends or stop is called, and returns that loopback once the
// command's output holds each of ready.
func serving(t testing.TB, b *Box, dir, command string, ready ...string) (l *Loopback, stop func()) {
	t.Helper()
	return servingWith(t, b, dir, command, func(*Spec) {}, ready...)
}

// servingWith is serving with tweak applied to the command's Spec.
func servingWith(t testing.TB, b *Box, dir, command string, tweak func(*Spec), ready ...string) (l *Loopback, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := newWaitWriter()
	loops := make(chan *Loopback, 1)
	done := make(chan struct{})
	s := Spec{Command: command, Dir: dir, Writable: []string{dir}, Output: out, MemoryBytes: 1 << 30, Processes: 512,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir}, Serves: func(l *Loopback) { loops <- l }}
	tweak(&s)
	go func() {
		defer close(done)
		if _, err := b.Run(ctx, s); err != nil {
			t.Errorf("Run(%q): %v", command, err)
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	select {
	case l = <-loops:
	case <-done:
		t.Fatalf("%q ended before it ran", command)
	}
	out.waitFor(t, done, ready...)
	return l, stop
}

// netBox is a box with a network namespace, for the tests of reaching
// one box's loopback from another; they need curl and python3.
func netBox(t testing.TB) *Box {
	t.Helper()
	if !hasTool("curl") {
		t.Fatal("curl is needed for this test (apt-get install curl)")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatal("/usr/bin/python3 is needed for this test (apt-get install python3)")
	}
	b := New(Options{})
	t.Cleanup(func() { b.Close() })
	requireNetns(t, b)
	return b
}

// A command reaches what a box in its Reach listens on at 127.0.0.1,
// ::1 and any address, each on the same family as the server; nothing
// else (a port on the host's loopback, a family the server does not
// listen on); and nothing once that box has ended.
func TestReachServedLoopback(t *testing.T) {
	b := netBox(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the box\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host := hostListener(t)
	py := "/usr/bin/python3 -u -m http.server"
	l, stop := serving(t, b, dir, fmt.Sprintf("%[1]s 8765 --bind 127.0.0.1 & %[1]s 8766 --bind ::1 & %[1]s 8767 --bind 0.0.0.0 & wait", py),
		"port 8765", "port 8766", "port 8767")
	if got := l.listening(); len(got) != 3 {
		t.Fatalf("the box listens on %v, want 8765 (v4), 8766 (v6), 8767 (v4)", got)
	}

	fetch := func(url string) string {
		return fmt.Sprintf(`out=$(curl -g -sS -m 5 %q 2>&1); echo "%s=$?:$out"`, url, url)
	}
	cases := []struct {
		url, want string
	}{
		{"http://127.0.0.1:8765/hello.txt", "=0:hello from the box"},
		{"http://localhost:8765/hello.txt", "=0:hello from the box"},
		{"http://[::1]:8766/hello.txt", "=0:hello from the box"},
		{"http://127.0.0.1:8767/hello.txt", "=0:hello from the box"},
		// Not where the server listens: refused, as on one machine.
		{"http://127.0.0.1:8766/hello.txt", "=7:"},
		{"http://[::1]:8765/hello.txt", "=7:"},
		// The host's loopback stays out of reach.
		{fmt.Sprintf("http://127.0.0.1:%d/", host.port()), "=7:"},
	}
	var cmd []string
	for _, c := range cases {
		cmd = append(cmd, fetch(c.url))
	}
	o, out := run(t, b, dir, strings.Join(cmd, "; "), func(s *Spec) { s.Reach = []*Loopback{l} })
	for _, c := range cases {
		if !strings.Contains(out, c.url+c.want) {
			t.Errorf("%s: want %q in %q (%+v)", c.url, c.want, out, o)
		}
	}
	if host.accepted.Load() != 0 {
		t.Errorf("the host's listener was reached %d times", host.accepted.Load())
	}

	// Without Reach, a box reaches nothing of the other's.
	_, out = run(t, b, dir, fetch("http://127.0.0.1:8765/hello.txt"))
	if !strings.Contains(out, "=7:") {
		t.Errorf("a box without Reach got through: %q", out)
	}

	// Once the serving box has ended, nothing is reached.
	stop()
	_, out = run(t, b, dir, fetch("http://127.0.0.1:8765/hello.txt"), func(s *Spec) { s.Reach = []*Loopback{l} })
	if !strings.Contains(out, "=7:") {
		t.Errorf("the ended box was reached: %q", out)
	}
}

// A connection held open to a serving box is closed when that box ends.
func TestReachEndsWithTheServingBox(t *testing.T) {
	b := netBox(t)
	dir := t.TempDir()
	// A server that accepts and keeps the connection until its box ends.
	l, stop := serving(t, b, dir, `/usr/bin/python3 -u -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 9100)); s.listen(); print('listening', flush=True)
c, _ = s.accept(); c.sendall(b'hi\n'); time.sleep(3600)"`, "listening")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := newWaitWriter()
	done := make(chan Outcome, 1)
	go func() {
		o, err := b.Run(ctx, Spec{Command: `/usr/bin/python3 -u -c "
import socket
c = socket.create_connection(('127.0.0.1', 9100))
print('got', c.recv(3), flush=True)
print('end', c.recv(10), flush=True)"`, Dir: dir, Writable: []string{dir}, Output: client, MemoryBytes: 1 << 30, Processes: 512,
			Env: []string{"PATH=/usr/bin:/bin"}, Reach: []*Loopback{l}})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- o
	}()
	client.waitFor(t, nil, "got b'hi\\n'")
	stop()
	select {
	case o := <-done:
		if o.ExitCode != 0 || !strings.Contains(client.b.String(), "end b''") {
			t.Errorf("the client did not see the connection end: %+v %q", o, client.b.String())
		}
	case <-ctx.Done():
		t.Fatalf("the client still waits on its connection: %q", client.b.String())
	}
}

// The connector connects only to loopback ports of its own box: a port
// that is not a TCP port is refused, and a port open on the host's
// loopback is not reached through it.
func TestConnectorOnlyItsOwnLoopback(t *testing.T) {
	b := netBox(t)
	host := hostListener(t)
	l, _ := serving(t, b, t.TempDir(), "echo up; exec sleep 600", "up")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		port int
		v6   bool
		want string
	}{
		{0, false, "not a TCP port"},
		{-1, false, "not a TCP port"},
		{65536, true, "not a TCP port"},
		{host.port(), false, "connection refused"},
		{host.port(), true, "connection refused"},
	} {
		conn, err := l.dial(ctx, c.port, c.v6)
		if err == nil {
			conn.Close()
			t.Errorf("port %d (v6 %v): connected", c.port, c.v6)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("port %d (v6 %v): %v, want %q", c.port, c.v6, err, c.want)
		}
	}
	if host.accepted.Load() != 0 {
		t.Errorf("the host's listener was reached %d times", host.accepted.Load())
	}
}

func TestParseListening(t *testing.T) {
	const head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	line := func(local, st string) string {
		return "   0: " + local + " 00000000:0000 " + st + " 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0\n"
	}
	const (
		v4lo   = "0100007F"
		v4any  = "00000000"
		v4lo2  = "0200007F" // 127.0.0.2
		v4priv = "0100000A" // 10.0.0.1
		v6lo   = "00000000000000000000000001000000"
		v6any  = "00000000000000000000000000000000"
		v6map  = "0000000000000000FFFF00000100007F" // ::ffff:127.0.0.1
	)
	for _, c := range []struct {
		name      string
		tcp, tcp6 string
		want      []listenPort
	}{
		{"empty", "", "", []listenPort{}},
		{"v4 loopback", line(v4lo+":1F40", "0A"), "", []listenPort{{Port: 8000, V4: true}}},
		{"v4 any", line(v4any+":0050", "0A"), "", []listenPort{{Port: 80, V4: true}}},
		{"v6 loopback", "", line(v6lo+":1F40", "0A"), []listenPort{{Port: 8000, V6: true}}},
		{"v6 any serves both", "", line(v6any+":1F40", "0A"), []listenPort{{Port: 8000, V4: true, V6: true}}},
		{"v4-mapped", "", line(v6map+":1F40", "0A"), []listenPort{{Port: 8000, V4: true}}},
		{"both families merged, sorted", line(v4lo+":1F41", "0A") + line(v4lo+":1F40", "0A"), line(v6lo+":1F40", "0A"),
			[]listenPort{{Port: 8000, V4: true, V6: true}, {Port: 8001, V4: true}}},
		{"established is not listening", line(v4lo+":1F40", "01"), "", []listenPort{}},
		{"other addresses are not reached", line(v4lo2+":1F40", "0A") + line(v4priv+":1F41", "0A"), "", []listenPort{}},
		{"port 0 and junk", line(v4lo+":0000", "0A") + "garbage\n" + line("XYZ:1F40", "0A") + line(v4lo+":FFFFF", "0A"), "", []listenPort{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := parseListening([]byte(head+c.tcp), []byte(head+c.tcp6))
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// checkedConn takes only a TCP connection to the loopback port asked
// for: a Unix socket or a connection elsewhere from the connector is
// refused (and closed).
func TestCheckedConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	tcpFD := func() int {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		f, err := c.(*net.TCPConn).File()
		if err != nil {
			t.Fatal(err)
		}
		return int(f.Fd())
	}
	pipeFD := func() int {
		a, b, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		fd, err := unix.Dup(int(a.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		return fd
	}
	unixFD := func() int {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fds[1])
		return fds[0]
	}
	for _, c := range []struct {
		name string
		fd   func() int
		port int
		ok   bool
	}{
		{"tcp to the port", tcpFD, port, true},
		{"tcp to another port", tcpFD, port + 1, false},
		{"a Unix socket", unixFD, port, false},
		{"not a socket", pipeFD, port, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := checkedConn(c.fd(), c.port)
			if (err == nil) != c.ok {
				t.Fatalf("checkedConn: %v, want ok %v", err, c.ok)
			}
			if conn != nil {
				conn.Close()
			}
		})
	}
}

// copyBoth passes a half-close on: a client that ends its request by
// closing its writing side still reads the whole answer.
func TestCopyBothHalfClose(t *testing.T) {
	pair := func() (client, relayed net.Conn) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c, s
	}
	client, down := pair()
	up, server := pair()
	go copyBoth(down, up)
	go func() {
		// An echo that answers once its input has ended.
		b, _ := io.ReadAll(server)
		server.Write(append([]byte("got:"), b...))
		server.Close()
	}()
	client.Write([]byte("request"))
	client.(*net.TCPConn).CloseWrite()
	client.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(client)
	if string(got) != "got:request" {
		t.Fatalf("the client read %q, %v", got, err)
	}
}

// A box holds no descriptor of another box's: what a running box's
// helper handed bridle (the seccomp filter's listener, the proxy's
// listener, the connector's socket, relayed listeners) stays with bridle
// when it starts the next box's helper.
func TestNoDescriptorOfAnotherBox(t *testing.T) {
	b := netBox(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	out := newWaitWriter()
	loops := make(chan *Loopback, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx, Spec{Command: "/usr/bin/python3 -u -m http.server 8765 --bind 127.0.0.1", Dir: dir, Writable: []string{dir},
			Output: out, Env: []string{"PATH=/usr/bin:/bin"}, AllowHosts: []string{"example.com"}, Writes: &probeSeen{},
			Serves: func(l *Loopback) { loops <- l }})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	l := <-loops
	out.waitFor(t, done, "port 8765")
	// Listed by the command itself: no socket and no seccomp listener
	// (what it inherits from this test's own environment is left alone).
	_, list := run(t, b, dir, "ls -l /proc/self/fd/", func(s *Spec) { s.Reach = []*Loopback{l}; s.AllowHosts = []string{"example.com"} })
	if !strings.Contains(list, "/proc/") || strings.Contains(list, "socket:") || strings.Contains(list, "anon_inode:") {
		t.Errorf("the command holds descriptors it was not given: %q", list)
	}
}

// The connector is a child of the command: a shell waiting for its jobs
// is not held by it, and the box ends when the command does.
func TestConnectorHoldsNoWait(t *testing.T) {
	b := netBox(t)
	served := false
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := newWaitWriter()
	dir := t.TempDir()
	o, err := b.Run(ctx, Spec{Command: "sleep 0.1 & wait; echo waited; bash -c 'sleep 0.1 & wait; echo bash-waited'", Dir: dir, Writable: []string{dir},
		Output: out, Env: []string{"PATH=/usr/bin:/bin"}, Serves: func(*Loopback) { served = true }})
	if err != nil || o.ExitCode != 0 || ctx.Err() != nil {
		t.Fatalf("Run: %+v %v (%v)", o, err, ctx.Err())
	}
	if got := out.b.String(); got != "waited\nbash-waited\n" || !served {
		t.Errorf("output %q, served %v", got, served)
	}
}
