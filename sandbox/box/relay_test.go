//go:build linux

package box

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sys/unix"
)

// A test's wait for something that must happen: a bound, never a pace.
const mustWithin = 30 * time.Second

// fakeConnector is bridle's end of a connector whose other end (peer)
// the test plays. fill, before the reader starts, fills bridle's side of
// the socket, as a connector that stopped reading leaves it.
func fakeConnector(t *testing.T, fill bool) (c *connector, peer int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fill {
		unix.SetNonblock(fds[0], true)
		for {
			if _, err := unix.Write(fds[0], []byte(`{"id":0}`)); err == unix.EAGAIN {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		unix.SetNonblock(fds[0], false)
	}
	c, err = newConnector(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.close()
		unix.Close(fds[1])
	})
	return c, fds[1]
}

// closedPeer reports whether every copy of the other end of a socket
// pair, whose end is kept, has been closed.
func closedPeer(t *testing.T, kept int) bool {
	t.Helper()
	n, _, err := unix.Recvfrom(kept, make([]byte, 1), unix.MSG_DONTWAIT)
	switch {
	case err == unix.EAGAIN:
		return false
	case err != nil || n != 0:
		t.Fatalf("read the kept end: %d, %v", n, err)
	}
	return true
}

// A dial that gives up (its context ends) after the reader took its
// request, but before the reader handed over the reply, leaves no
// descriptor behind: forget waits for the reply and closes it. A
// connector the command took over could otherwise leave one in bridle
// per try.
func TestForgetClosesTheReplyOnItsWay(t *testing.T) {
	for _, c := range []struct {
		name  string
		taken bool // the reader (or close) took the request
	}{
		{"taken by the reader", true},
		{"still waiting", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				conn := &connector{pending: map[uint64]chan connectResult{}}
				ch := make(chan connectResult, 1)
				conn.pending[7] = ch
				if c.taken {
					conn.mu.Lock()
					delete(conn.pending, 7)
					conn.mu.Unlock()
				}
				forgotten := make(chan struct{})
				go func() {
					conn.forget(7, ch)
					close(forgotten)
				}()
				synctest.Wait()
				if !c.taken {
					if !isDone(forgotten) {
						t.Fatal("forget waits for a reply to a request nobody took")
					}
					if len(conn.pending) != 0 {
						t.Fatal("forget left the request waiting")
					}
					return
				}
				// The reply comes once the dial has given up.
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer unix.Close(fds[1])
				sent := fds[0]
				ch <- connectResult{fd: sent}
				<-forgotten
				if !closedPeer(t, fds[1]) {
					unix.Close(sent)
					t.Fatal("the descriptor of a reply that came after its dial gave up was left open")
				}
			})
		})
	}
}

// A connector that stops reading (the command can SIGSTOP it) holds no
// dial past its context: neither the one whose request cannot be
// written nor the one waiting for its turn to write.
func TestDialGivesUpWhenTheConnectorStopsReading(t *testing.T) {
	c, peer := fakeConnector(t, true)
	type result struct {
		i   int
		err error
	}
	results := make(chan result, 2)
	var cancels []context.CancelFunc
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		go func() {
			conn, err := c.dial(ctx, 8000, false)
			if conn != nil {
				conn.Close()
			}
			results <- result{i, err}
		}()
	}
	for i, cancel := range cancels {
		cancel()
		select {
		case r := <-results:
			if r.err == nil {
				t.Errorf("dial %d connected through a connector that reads nothing", r.i)
			}
		case <-time.After(mustWithin):
			t.Fatalf("%d dials still wait after their context ended", len(cancels)-i)
		}
	}
	// Once the connector reads again, the next request is written: no
	// deadline of a dial that gave up stays on the socket.
	unix.SetNonblock(peer, true)
	for {
		if _, err := unix.Read(peer, make([]byte, 512)); err != nil {
			break
		}
	}
	if err := c.write(context.Background(), []byte(`{}`)); err != nil {
		t.Errorf("a request after the dials gave up: %v", err)
	}
}

// A listener of the relay holds no connection slot while it waits: with
// more listeners than slots, a connection to any of them is relayed, and
// one past the slots is closed at once instead of waiting unaccepted.
func TestRelayIdleListenersHoldNoSlot(t *testing.T) {
	c, peer := fakeConnector(t, false)
	// The connector takes requests and answers none: each relayed
	// connection holds its slot.
	asked := make(chan int, 8)
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := unix.Read(peer, buf)
			if err != nil || n == 0 {
				return
			}
			var req connectRequest
			if json.Unmarshal(buf[:n], &req) == nil {
				asked <- req.Port
			}
		}
	}()
	l := newLoopback(nil)
	l.conn = c
	l.settle()
	const slots = 2
	routes := map[relayRoute]*Loopback{}
	var fds, ports []int
	for range slots + 1 {
		fd, port, err := listenLoopback(0, false)
		if err != nil {
			t.Fatal(err)
		}
		routes[relayRoute{port: port}] = l
		fds, ports = append(fds, fd), append(ports, port)
	}
	r := startRelay(routes, slots)
	defer r.close()
	for _, fd := range fds {
		r.serve(fd)
	}
	dial := func(port int) net.Conn {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	for _, port := range ports[:slots] {
		dial(port)
		select {
		case got := <-asked:
			if got != port {
				t.Fatalf("the connector was asked for port %d, want %d", got, port)
			}
		case <-time.After(mustWithin):
			t.Fatalf("a connection to port %d was not relayed: an idle listener holds its slot", port)
		}
	}
	over := dial(ports[slots])
	over.SetReadDeadline(time.Now().Add(mustWithin))
	if n, err := over.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Fatalf("a connection past the slots was not closed: %d, %v", n, err)
	}
	select {
	case got := <-asked:
		t.Errorf("the connector was asked for port %d past the slots", got)
	default:
	}
}

// The connector has the command's address-space cap (raised to a floor
// above what its Go runtime reserved, for a small cap) and cannot be
// taken over by the command, its parent: tracing it and taking its
// descriptors fail. It still connects.
func TestConnectorLockedAndCapped(t *testing.T) {
	b := netBox(t)
	for _, c := range []struct {
		name  string
		limit int64
		exact bool // the connector's cap is the command's
	}{
		{"default cap", 4096 << 20, true},
		{"small cap", 256 << 20, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			// The command tries to take over its child, the connector,
			// writes what it got, then serves.
			script := `import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
me = str(os.getpid())
kids = [p for p in os.listdir('/proc') if p.isdigit() and open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[1] == me]
res = []
for k in kids:
    k = int(k)
    r = libc.ptrace(16, k, None, None)
    res.append('ptrace=%d:%d' % (r, ctypes.get_errno()))
    if r == 0:
        os.waitpid(k, 0x40000000)
        libc.ptrace(17, k, None, None)
    pidfd = libc.syscall(434, k, 0)
    r = libc.syscall(438, pidfd, 3, 0)
    res.append('getfd=%d:%d' % (r, ctypes.get_errno()))
open('tried', 'w').write(' '.join(res) + '\n')
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); print('listening', flush=True)
while True:
    c, _ = s.accept(); c.sendall(b'hi\n'); c.close()
`
			if err := os.WriteFile(filepath.Join(dir, "take.py"), []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			const port = 9150
			l, _ := servingWith(t, b, dir, fmt.Sprintf("exec /usr/bin/python3 -u %s/take.py %d", dir, port),
				func(s *Spec) { s.MemoryBytes = c.limit }, "listening")
			tried, err := os.ReadFile(filepath.Join(dir, "tried"))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.TrimSpace(string(tried)), "ptrace=-1:1 getfd=-1:1"; got != want {
				t.Errorf("the command's tries at its connector: %q, want %q (EPERM both)", got, want)
			}

			pid := connectorOf(t, filepath.Join(dir, "take.py"))
			limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
			if err != nil {
				t.Fatal(err)
			}
			var soft, hard string
			for _, line := range strings.Split(string(limits), "\n") {
				if f := strings.Fields(line); strings.HasPrefix(line, "Max address space") && len(f) >= 5 {
					soft, hard = f[3], f[4]
				}
			}
			got, err := strconv.ParseInt(soft, 10, 64)
			switch {
			case err != nil || soft != hard:
				t.Errorf("the connector's address space is not capped: soft %q, hard %q", soft, hard)
			case c.exact && got != c.limit:
				t.Errorf("the connector's address-space cap is %d, want the command's %d", got, c.limit)
			case !c.exact && (got < c.limit || got > 4<<30):
				t.Errorf("the connector's address-space cap is %d, want its floor: what its runtime reserved and 1 GiB", got)
			}

			t.Logf("the connector's address-space cap: %d MiB", got>>20)

			// Many at once, each on a thread of the connector's.
			ctx, cancel := context.WithTimeout(context.Background(), mustWithin)
			defer cancel()
			errs := make(chan error, 2*connectorParallel)
			for range cap(errs) {
				go func() {
					conn, err := l.dial(ctx, port, false)
					if err != nil {
						errs <- fmt.Errorf("the capped connector did not connect: %w", err)
						return
					}
					defer conn.Close()
					conn.SetReadDeadline(time.Now().Add(mustWithin))
					hi := make([]byte, 3)
					if n, err := io.ReadFull(conn, hi); string(hi[:n]) != "hi\n" {
						errs <- fmt.Errorf("read %q, %v through the connector", hi[:n], err)
						return
					}
					errs <- nil
				}()
			}
			for range cap(errs) {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// connectorOf finds the connector whose parent runs script.
func connectorOf(t testing.TB, script string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	cmdline := func(pid string) string {
		b, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		return string(b)
	}
	parent := ""
	for _, e := range ents {
		if strings.Contains(cmdline(e.Name()), script) {
			parent = e.Name()
		}
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || parent == "" {
			continue
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == parent && strings.Contains(cmdline(e.Name()), helperArg+"\x00connector") {
			pid, _ := strconv.Atoi(e.Name())
			return pid
		}
	}
	t.Fatalf("no connector under the process running %s (%q)", script, parent)
	return 0
}
