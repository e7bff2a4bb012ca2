package box

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// The relay: a command whose Spec.Reach names other boxes' loopbacks
// finds, on its own 127.0.0.1 and ::1, the ports those boxes listen on
// when it starts. Its helper opens a listener on each in the command's
// network namespace and hands it to bridle, which accepts there, asks
// the serving box's connector (connector_linux.go) for a connection to
// the same port, and copies the bytes both ways. No port is opened on
// the host, and a box reaches only what Spec.Reach names.

const (
	// maxRelayPorts bounds the ports a command is given.
	maxRelayPorts = 64
	// maxRelayed bounds the connections a command has relayed at once:
	// one more is closed as soon as it is accepted.
	maxRelayed = 128
	// relayDial bounds how long a connection waits for the serving box.
	relayDial = 10 * time.Second
)

// relayRoute is a port of the command's loopback: 127.0.0.1 or, with
// v6, ::1.
type relayRoute struct {
	port int
	v6   bool
}

// relay serves one command's relayed ports until close.
type relay struct {
	routes map[relayRoute]*Loopback
	ports  []listenPort // what the helper is to listen on
	slots  chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	lns    map[net.Listener]*Loopback
	conns  map[*relayedConn]struct{}
	wg     sync.WaitGroup
}

type relayedConn struct {
	from *Loopback
	down net.Conn // the command's side
	up   net.Conn // the serving box's side
}

// newRelay plans the ports of the loopbacks in reach, read now; nil when
// none listens. The first box in reach to listen on a port has it.
func newRelay(reach []*Loopback) *relay {
	routes := map[relayRoute]*Loopback{}
	var ports []listenPort
	seen := map[*Loopback]bool{}
	for _, l := range reach {
		if l == nil || seen[l] {
			continue
		}
		seen[l] = true
		for _, p := range l.listening() {
			if len(ports) == maxRelayPorts {
				break
			}
			q := listenPort{Port: p.Port}
			if p.V4 && routes[relayRoute{p.Port, false}] == nil {
				routes[relayRoute{p.Port, false}], q.V4 = l, true
			}
			if p.V6 && routes[relayRoute{p.Port, true}] == nil {
				routes[relayRoute{p.Port, true}], q.V6 = l, true
			}
			if q.V4 || q.V6 {
				ports = append(ports, q)
			}
		}
	}
	if len(ports) == 0 {
		return nil
	}
	r := startRelay(routes, maxRelayed)
	r.ports = ports
	return r
}

// startRelay is a relay of routes, with at most conns connections at
// once; it drops a box's ports when that box ends.
func startRelay(routes map[relayRoute]*Loopback, conns int) *relay {
	r := &relay{routes: routes, lns: map[net.Listener]*Loopback{}, conns: map[*relayedConn]struct{}{},
		slots: make(chan struct{}, conns)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	used := map[*Loopback]bool{}
	for _, l := range r.routes {
		if used[l] {
			continue
		}
		used[l] = true
		// A box that ends takes its ports and connections along.
		go func() {
			select {
			case <-l.done:
				r.drop(l)
			case <-r.ctx.Done():
			}
		}()
	}
	return r
}

// serve takes a listener the helper opened (fd) and accepts on it.
func (r *relay) serve(fd int) {
	f := os.NewFile(uintptr(fd), "box-relay")
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return
	}
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		ln.Close()
		return
	}
	route := relayRoute{port: a.Port, v6: a.IP.To4() == nil}
	l := r.routes[route]
	r.mu.Lock()
	if l == nil || r.closed || isDone(l.done) {
		r.mu.Unlock()
		ln.Close()
		return
	}
	r.lns[ln] = l
	r.wg.Add(1)
	r.mu.Unlock()
	go r.accept(ln, l, route)
}

// accept relays the connections to ln. A connection takes a slot once
// accepted, so that idle listeners hold none; when none is free it is
// closed at once, as a full server would refuse it.
func (r *relay) accept(ln net.Listener, l *Loopback, route relayRoute) {
	defer r.wg.Done()
	for {
		down, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, or the like: try again shortly.
			select {
			case <-time.After(50 * time.Millisecond):
				continue
			case <-r.ctx.Done():
				return
			}
		}
		select {
		case r.slots <- struct{}{}:
		default:
			down.Close()
			continue
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() { <-r.slots }()
			r.pipe(down, l, route)
		}()
	}
}

// pipe connects down to the serving box and copies both ways until
// both sides are done, either fails, or the relay drops it.
func (r *relay) pipe(down net.Conn, l *Loopback, route relayRoute) {
	ctx, cancel := context.WithTimeout(r.ctx, relayDial)
	up, err := l.dial(ctx, route.port, route.v6)
	cancel()
	if err != nil {
		down.Close()
		return
	}
	c := &relayedConn{from: l, down: down, up: up}
	r.mu.Lock()
	if r.closed || isDone(l.done) {
		r.mu.Unlock()
		c.close()
		return
	}
	r.conns[c] = struct{}{}
	r.mu.Unlock()
	copyBoth(down, up)
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// copyBoth copies a to b and b to a, passing each side's end of writing
// on as a half-close; an error either way ends both.
func copyBoth(a, b net.Conn) {
	done := make(chan struct{})
	one := func(dst, src net.Conn) {
		if _, err := io.Copy(dst, src); err != nil {
			dst.Close()
			src.Close()
			return
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}
	go func() {
		one(b, a)
		close(done)
	}()
	one(a, b)
	<-done
	a.Close()
	b.Close()
}

func (c *relayedConn) close() {
	c.down.Close()
	c.up.Close()
}

// drop closes the listeners and connections of l, whose box has ended:
// a later connection to its ports is refused.
func (r *relay) drop(l *Loopback) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for ln, from := range r.lns {
		if from == l {
			ln.Close()
			delete(r.lns, ln)
		}
	}
	for c := range r.conns {
		if c.from == l {
			c.close()
		}
	}
}

// close ends every listener and connection and waits for their
// goroutines.
func (r *relay) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	r.cancel()
	for ln := range r.lns {
		ln.Close()
	}
	for c := range r.conns {
		c.close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
