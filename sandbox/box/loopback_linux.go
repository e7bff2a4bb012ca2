package box

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Loopback is a running box's loopback interface: what its processes
// listen on at 127.0.0.1 and ::1 (Spec.Serves gives it, Spec.Reach names
// it). It is reachable until the box's command ends, then nothing is.
type Loopback struct {
	// proc is /proc/PID of the box's first process, opened while it
	// runs: its net/tcp names the box's listening ports where diag cannot,
	// and a pid the system gives another process later never leads there.
	proc *os.File
	// diag is a NETLINK_SOCK_DIAG socket of the box's network namespace
	// (diag_linux.go), through which its ports are listed; -1 when the
	// helper made none or a listing through it failed: proc is read.
	diag int
	seq  uint32 // of the last request through diag
	// ready is closed once the helper has execed the command (or
	// failed): conn and proxyPort are set before.
	ready chan struct{}
	conn  *connector // nil when the connector did not come
	// proxyPort is the box's own proxy listener: never reached.
	proxyPort int

	mu    sync.Mutex // guards proc, diag and seq against end
	done  chan struct{}
	once  sync.Once
	ended bool
}

// newLoopback is the loopback of the box whose first process's /proc
// directory is proc (nil: its ports cannot be listed).
func newLoopback(proc *os.File) *Loopback {
	return &Loopback{proc: proc, diag: -1, ready: make(chan struct{}), done: make(chan struct{})}
}

// takeDiag keeps fd, the diag socket the helper passed, when it is one;
// otherwise, or once the box has ended, it is closed.
func (l *Loopback) takeDiag(fd int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || l.diag >= 0 || checkDiag(fd) != nil {
		unix.Close(fd)
		return
	}
	l.diag = fd
}

// settle marks the helper's reports read: the connector came or not.
func (l *Loopback) settle() {
	select {
	case <-l.ready:
	default:
		close(l.ready)
	}
}

// end makes the loopback unreachable: the box's command has ended and
// the helper's reports have been read (conn is set, or never will be).
func (l *Loopback) end() {
	l.once.Do(func() {
		l.mu.Lock()
		l.ended = true
		if l.proc != nil {
			l.proc.Close()
		}
		if l.diag >= 0 {
			// The socket holds the box's network namespace.
			unix.Close(l.diag)
			l.diag = -1
		}
		l.mu.Unlock()
		if l.conn != nil {
			l.conn.close()
		}
		l.settle()
		close(l.done)
	})
}

// dial connects to port (::1 with v6) in the box.
func (l *Loopback) dial(ctx context.Context, port int, v6 bool) (*net.TCPConn, error) {
	select {
	case <-l.ready:
	case <-l.done:
		return nil, errConnectorGone
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if l.conn == nil {
		return nil, errConnectorGone
	}
	return l.conn.dial(ctx, port, v6)
}

// listenPort is a TCP port a box listens on, by family.
type listenPort struct {
	Port int  `json:"port"`
	V4   bool `json:"v4,omitempty"`
	V6   bool `json:"v6,omitempty"`
}

// maxListing bounds what is read of a box's listing: an inet_diag dump
// longer than it is given up for /proc/PID/net/tcp and tcp6, of which a
// command with thousands of sockets only loses the ports past it.
const maxListing = 1 << 20

// listening lists the ports the box listens on now, without its
// proxy's; nothing once it has ended or before its command runs. They
// are asked of the kernel through the box's diag socket; where the
// helper could make none (a kernel without netlink sock_diag) or a
// listing through it failed, they are read from the box's
// /proc/PID/net/tcp and tcp6, which costs ~7 ms here.
func (l *Loopback) listening() []listenPort {
	select {
	case <-l.ready:
	default:
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || l.conn == nil {
		return nil
	}
	var ports []listenPort
	if l.diag >= 0 {
		set := portSet{}
		l.seq += 2
		if err := diagListening(l.diag, l.seq, time.Now().Add(diagWait), set); err != nil {
			// A dump cut short would answer the next request: the
			// socket is done with.
			unix.Close(l.diag)
			l.diag = -1
		} else {
			ports = set.sorted()
		}
	}
	if l.diag < 0 {
		if l.proc == nil {
			return nil
		}
		ports = l.procListening()
	}
	return slices.DeleteFunc(ports, func(p listenPort) bool { return p.Port == l.proxyPort })
}

// procListening reads the box's listening ports from its
// /proc/PID/net/tcp and tcp6.
func (l *Loopback) procListening() []listenPort {
	read := func(name string) []byte {
		fd, err := unix.Openat(int(l.proc.Fd()), "net/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		b, _ := io.ReadAll(io.LimitReader(f, maxListing))
		return b
	}
	return parseListening(read("tcp"), read("tcp6"))
}

// portSet gathers the ports of listening sockets as a command reaches
// them: on 127.0.0.1 when its server listens on 127.0.0.1, 0.0.0.0 or
// ::, and on ::1 when it listens on ::1 or ::. Other addresses
// (127.0.0.2, a private one) and port 0 are not reached.
type portSet map[int]*listenPort

func (s portSet) add(ip net.IP, port int) {
	var v4, v6 bool
	switch {
	case port <= 0 || port > 65535:
		return
	case ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv4zero):
		// Also ::ffff:127.0.0.1 and ::ffff:0.0.0.0 of an IPv6 socket.
		v4 = true
	case ip.Equal(net.IPv6loopback):
		v6 = true
	case ip.Equal(net.IPv6unspecified):
		v4, v6 = true, true
	default:
		return
	}
	p := s[port]
	if p == nil {
		p = &listenPort{Port: port}
		s[port] = p
	}
	p.V4, p.V6 = p.V4 || v4, p.V6 || v6
}

// sorted is the set by port.
func (s portSet) sorted() []listenPort {
	out := make([]listenPort, 0, len(s))
	for _, p := range s {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b listenPort) int { return a.Port - b.Port })
	return out
}

// parseListening reads the sockets listening on a loopback or wildcard
// address from the text of /proc/net/tcp and tcp6, as portSet reaches
// them. Sorted by port.
func parseListening(tcp, tcp6 []byte) []listenPort {
	ports := portSet{}
	for _, text := range [][]byte{tcp, tcp6} {
		sc := bufio.NewScanner(bytes.NewReader(text))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			// sl local_address rem_address st ...; 0A is TCP_LISTEN.
			if len(f) < 4 || f[3] != "0A" {
				continue
			}
			if ip, port, ok := procAddr(f[1]); ok {
				ports.add(ip, port)
			}
		}
	}
	return ports.sorted()
}

// procAddr decodes a /proc/net/tcp address, "0100007F:1F40": the
// address as 32-bit words in the machine's byte order, in hex, and the
// port in hex.
func procAddr(s string) (net.IP, int, bool) {
	addr, portHex, ok := strings.Cut(s, ":")
	if !ok || len(addr) != 8 && len(addr) != 32 {
		return nil, 0, false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	ip := make(net.IP, len(addr)/2)
	for i := 0; i < len(addr); i += 8 {
		w, err := strconv.ParseUint(addr[i:i+8], 16, 32)
		if err != nil {
			return nil, 0, false
		}
		binary.NativeEndian.PutUint32(ip[i/2:], uint32(w))
	}
	return ip, int(port), true
}
