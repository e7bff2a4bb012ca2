//go:build linux

package box

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// diagServer listens, in the box, on 127.0.0.1:8801, ::1:8802,
// 0.0.0.0:8803, [::]:8804 (both families) and 127.0.0.1:9300-9364; it
// also holds what is not listed: a UDP socket (8805), a TCP socket bound
// but not listening (8806), a listener on 127.0.0.2 (8807) and a
// connection to 8801. Then it says how many netlink sockets it holds.
const diagServer = `import os, socket, time
socks = []
def tcp(family, addr, port, listen=True):
    s = socket.socket(family)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    if listen:
        s.listen()
    socks.append(s)
tcp(socket.AF_INET, "127.0.0.1", 8801)
tcp(socket.AF_INET6, "::1", 8802)
tcp(socket.AF_INET, "0.0.0.0", 8803)
tcp(socket.AF_INET6, "::", 8804)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 8805))
tcp(socket.AF_INET, "127.0.0.1", 8806, listen=False)
tcp(socket.AF_INET, "127.0.0.2", 8807)
for port in range(9300, 9365):
    tcp(socket.AF_INET, "127.0.0.1", port)
c = socket.create_connection(("127.0.0.1", 8801))
held = 0
for fd in os.listdir("/proc/self/fd"):
    try:
        s = socket.socket(fileno=int(fd))
    except OSError:
        continue
    if s.family == socket.AF_NETLINK:
        held += 1
    s.detach()
print("netlink sockets held: %d (said)" % held, flush=True)
time.sleep(3600)
`

// A serving box's ports are listed through its diag socket: the
// listeners on 127.0.0.1, ::1, 0.0.0.0 and ::, not its UDP socket, a
// bound TCP socket that does not listen, a connection or a listener on
// 127.0.0.2; the same as its /proc/PID/net/tcp and tcp6 say, which are
// read once the socket is gone. A command is given the first 64. The
// box's command never holds the socket.
func TestDiagListsServingBox(t *testing.T) {
	b := netBox(t)
	dir := t.TempDir()
	out := newWaitWriter()
	l, _ := servingWith(t, b, dir, "exec /usr/bin/python3 -u -c '"+diagServer+"'",
		func(s *Spec) { s.Output = teeWriter{s.Output, out} }, "(said)")
	// The helper's diag socket is close-on-exec and closed once passed.
	out.mu.Lock()
	said := out.b.String()
	out.mu.Unlock()
	if !strings.Contains(said, "netlink sockets held: 0 (said)") {
		t.Errorf("the command holds a netlink socket: %q", said)
	}

	want := []listenPort{{Port: 8801, V4: true}, {Port: 8802, V6: true}, {Port: 8803, V4: true}, {Port: 8804, V4: true, V6: true}}
	for port := 9300; port < 9365; port++ {
		want = append(want, listenPort{Port: port, V4: true})
	}
	got := l.listening()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listed %v,\nwant %v", got, want)
	}
	l.mu.Lock()
	diag := l.diag
	l.mu.Unlock()
	if diag < 0 {
		t.Fatal("the ports were not listed through the box's diag socket: the helper passed none, or the listing failed")
	}

	r := newRelay([]*Loopback{l})
	if r == nil {
		t.Fatal("the relay plans no port")
	}
	r.close()
	if fmt.Sprint(r.ports) != fmt.Sprint(want[:maxRelayPorts]) {
		t.Errorf("the relay plans %v,\nwant the first 64: %v", r.ports, want[:maxRelayPorts])
	}

	// The box's own proxy port is never listed.
	l.mu.Lock()
	l.proxyPort = 8803
	l.mu.Unlock()
	if got := l.listening(); len(got) != len(want)-1 || got[2].Port != 8804 {
		t.Errorf("with the proxy on 8803, listed %v", got)
	}
	l.mu.Lock()
	l.proxyPort = 0
	// The fallback: the same read from /proc.
	unix.Close(l.diag)
	l.diag = -1
	l.mu.Unlock()
	if got := l.listening(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read from /proc: %v,\nwant %v", got, want)
	}

	o, ran := run(t, b, dir, "true", func(s *Spec) { s.Reach = []*Loopback{l} })
	if o.ExitCode != 0 {
		t.Errorf("a command reaching the box: %+v %q", o, ran)
	}
}

// teeWriter writes to both.
type teeWriter struct {
	a, b interface{ Write([]byte) (int, error) }
}

func (w teeWriter) Write(p []byte) (int, error) {
	w.a.Write(p)
	return w.b.Write(p)
}

// diagMsg is a netlink message of the kernel's answer to request seq.
func diagMsg(typ uint16, seq uint32, data []byte) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN+len(data), unix.NLMSG_HDRLEN+len(data)+3)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_MULTI)
	binary.NativeEndian.PutUint32(b[8:], seq)
	copy(b[unix.NLMSG_HDRLEN:], data)
	for len(b)%unix.NLMSG_ALIGNTO != 0 {
		b = append(b, 0)
	}
	return b
}

// diagSock is an inet_diag_msg of a socket of family in state bound to
// addr (4 or 16 bytes) and port.
func diagSock(family, state uint8, addr []byte, port uint16) []byte {
	d := make([]byte, sizeofInetDiagMsg)
	d[0], d[1] = family, state
	binary.BigEndian.PutUint16(d[4:], port)
	copy(d[8:], addr)
	return d
}

func errnoData(e syscall.Errno) []byte {
	return binary.NativeEndian.AppendUint32(nil, uint32(-int32(e)))
}

func TestParseDiag(t *testing.T) {
	const seq = 7
	var (
		v4lo   = []byte{127, 0, 0, 1}
		v4any  = []byte{0, 0, 0, 0}
		v4lo2  = []byte{127, 0, 0, 2}
		v4priv = []byte{10, 0, 0, 1}
		v6lo   = append(make([]byte, 15), 1)
		v6any  = make([]byte, 16)
		v6map  = []byte{10: 0xff, 11: 0xff, 12: 127, 15: 1}
		done   = diagMsg(unix.NLMSG_DONE, seq, make([]byte, 4))
	)
	sock := func(family uint8, addr []byte, port uint16) []byte {
		return diagMsg(unix.SOCK_DIAG_BY_FAMILY, seq, diagSock(family, tcpListen, addr, port))
	}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	for _, c := range []struct {
		name    string
		family  uint8
		answer  []byte
		want    []listenPort
		done    bool
		wantErr string
	}{
		{"empty", unix.AF_INET, done, []listenPort{}, true, ""},
		{"v4 loopback", unix.AF_INET, cat(sock(unix.AF_INET, v4lo, 8000), done), []listenPort{{Port: 8000, V4: true}}, true, ""},
		{"v4 any, not done yet", unix.AF_INET, sock(unix.AF_INET, v4any, 80), []listenPort{{Port: 80, V4: true}}, false, ""},
		{"v6 loopback", unix.AF_INET6, cat(sock(unix.AF_INET6, v6lo, 8000), done), []listenPort{{Port: 8000, V6: true}}, true, ""},
		{"v6 any serves both", unix.AF_INET6, sock(unix.AF_INET6, v6any, 8000), []listenPort{{Port: 8000, V4: true, V6: true}}, false, ""},
		{"v4-mapped", unix.AF_INET6, sock(unix.AF_INET6, v6map, 8000), []listenPort{{Port: 8000, V4: true}}, false, ""},
		{"merged, sorted", unix.AF_INET, cat(sock(unix.AF_INET, v4lo, 8001), sock(unix.AF_INET, v4any, 8000), sock(unix.AF_INET, v4lo, 8000)),
			[]listenPort{{Port: 8000, V4: true}, {Port: 8001, V4: true}}, false, ""},
		{"not listening", unix.AF_INET, diagMsg(unix.SOCK_DIAG_BY_FAMILY, seq, diagSock(unix.AF_INET, 1, v4lo, 8000)), []listenPort{}, false, ""},
		{"other addresses, port 0", unix.AF_INET, cat(sock(unix.AF_INET, v4lo2, 8000), sock(unix.AF_INET, v4priv, 8001), sock(unix.AF_INET, v4lo, 0)),
			[]listenPort{}, false, ""},
		{"another request's answer", unix.AF_INET, diagMsg(unix.SOCK_DIAG_BY_FAMILY, seq-1, diagSock(unix.AF_INET, tcpListen, v4lo, 8000)),
			nil, false, "an answer to request 6, not 7"},
		{"another family", unix.AF_INET, sock(unix.AF_INET6, v6lo, 8000), nil, false, "a socket of family 10, asked for 2"},
		{"a short socket", unix.AF_INET, diagMsg(unix.SOCK_DIAG_BY_FAMILY, seq, diagSock(unix.AF_INET, tcpListen, v4lo, 8000)[:40]),
			nil, false, "a socket of 40 bytes, want 72"},
		{"refused", unix.AF_INET, diagMsg(unix.NLMSG_ERROR, seq, errnoData(unix.ENOENT)), nil, false, "the kernel refused: no such file or directory"},
		{"a failed dump", unix.AF_INET, diagMsg(unix.NLMSG_DONE, seq, errnoData(unix.EINTR)), nil, false, "the dump failed"},
		{"another type", unix.AF_INET, diagMsg(unix.RTM_NEWLINK, seq, diagSock(unix.AF_INET, tcpListen, v4lo, 8000)), nil, false, "a message of type 16"},
		{"past the end", unix.AF_INET, cat(done, sock(unix.AF_INET, v4lo, 8000)), nil, false, "an answer past its end"},
		{"a header longer than the answer", unix.AF_INET, sock(unix.AF_INET, v4lo, 8000)[:40], nil, false, "a malformed answer"},
		{"a header alone, too short", unix.AF_INET, []byte{4, 0, 0, 0}, nil, false, "a malformed answer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ports := portSet{}
			done, err := parseDiag(c.answer, c.family, seq, ports)
			switch {
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("error %v, want %q", err, c.wantErr)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case done != c.done:
				t.Errorf("done %v, want %v", done, c.done)
			default:
				if got := ports.sorted(); fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Errorf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

// An answer that never comes, or comes from another process than the
// kernel, ends the listing with an error: it never hangs.
func TestReceiveDiagBounded(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(fds[:])
	buf := make([]byte, diagBuffer)
	if _, err := receiveDiag(fds[0], buf, time.Now().Add(50*time.Millisecond)); err == nil || !strings.Contains(err.Error(), "in time") {
		t.Errorf("no answer: %v, want the kernel did not answer in time", err)
	}
	if _, err := unix.Write(fds[1], diagMsg(unix.NLMSG_DONE, 1, make([]byte, 4))); err != nil {
		t.Fatal(err)
	}
	if _, err := receiveDiag(fds[0], buf, time.Now().Add(mustWithin)); err == nil || !strings.Contains(err.Error(), "not the kernel's") {
		t.Errorf("an answer from a process: %v, want not the kernel's", err)
	}
}

// A loopback keeps only a NETLINK_SOCK_DIAG socket from its helper, and
// closes it when its box ends.
func TestTakeDiag(t *testing.T) {
	l := newLoopback(nil)
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair[1])
	l.takeDiag(pair[0])
	if l.diag >= 0 || !closedPeer(t, pair[1]) {
		t.Errorf("a Unix socket was taken for the diag socket (diag %d)", l.diag)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		t.Fatalf("a NETLINK_SOCK_DIAG socket: %v (this kernel has no netlink sock_diag)", err)
	}
	l.takeDiag(fd)
	if l.diag != fd {
		t.Fatalf("the diag socket was not taken (diag %d)", l.diag)
	}
	l.end()
	if l.diag != -1 {
		t.Errorf("the diag socket is kept after the end (diag %d)", l.diag)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("the diag socket is open after the end: %v", err)
	}
}
