package box

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The connector: a box whose loopback later commands may reach
// (Spec.Serves) holds one more process, started by the helper just
// before it execs the command, with every layer the command gets
// (namespaces, capabilities dropped, Landlock, seccomp, no_new_privs,
// rlimits; the address-space cap has a floor, see connectorHarden), and
// not dumpable, so that the command cannot take it over. bridle cannot
// enter the box's network namespace (that takes CAP_SYS_ADMIN in its own
// user namespace), but a socket keeps the namespace it was made in,
// whoever holds it: so bridle asks the connector over a socket pair for
// a connection to one of the box's loopback ports, and the connector
// answers with the connected socket (SCM_RIGHTS). It takes a port and a
// family, never an address: it only connects to 127.0.0.1 or ::1 of its
// own box, which has no other interface. It dies with the box's PID
// namespace.

// connectorFD is the connector's end of its socket pair with bridle.
const connectorFD = 3

// connectorDial bounds one connect in the box: a loopback connect is
// answered at once, unless the server's backlog is full.
const connectorDial = 5 * time.Second

// connectorParallel bounds the connects the connector runs at once.
const connectorParallel = 16

type connectRequest struct {
	ID   uint64 `json:"id"`
	Port int    `json:"port"`
	V6   bool   `json:"v6,omitempty"`
}

type connectReply struct {
	ID    uint64 `json:"id"`
	Error string `json:"error,omitempty"`
}

// connectorReady is the connector's first message, to the helper that
// started it: it has locked itself.
const connectorReady = "ready"

// connectorHeadroom is the address space the connector keeps above what
// its Go runtime has reserved when it starts (about 1.5 GiB on amd64,
// most of it never touched): room for its threads' stacks.
const connectorHeadroom = 1 << 30

// runConnector serves bridle's requests until its socket closes; limit
// is the command's address-space cap (0: none).
func runConnector(limit int64) int {
	if err := connectorHarden(limit); err != nil {
		return 1
	}
	if _, err := unix.Write(connectorFD, []byte(connectorReady)); err != nil {
		return 0
	}
	var mu sync.Mutex // one reply at a time on the socket
	slots := make(chan struct{}, connectorParallel)
	buf := make([]byte, 512)
	for {
		n, _, _, _, err := unix.Recvmsg(connectorFD, buf, nil, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return 0
		}
		var req connectRequest
		if json.Unmarshal(buf[:n], &req) != nil {
			continue
		}
		slots <- struct{}{}
		go func() {
			defer func() { <-slots }()
			rep := connectReply{ID: req.ID}
			fd, err := connectLoopback(req.Port, req.V6, connectorDial)
			var oob []byte
			if err != nil {
				rep.Error = err.Error()
			} else {
				oob = unix.UnixRights(fd)
				defer unix.Close(fd)
			}
			b, _ := json.Marshal(rep)
			mu.Lock()
			unix.Sendmsg(connectorFD, b, oob, nil, 0)
			mu.Unlock()
		}()
	}
}

// connectorHarden keeps the command, the connector's parent, from
// making it a process of its own: it is made non-dumpable, so that a
// process without CAP_SYS_PTRACE in the box's user namespace (the
// command has no capability) can neither trace it, read or write its
// memory, nor take its descriptors (pidfd_getfd); and it gets the
// command's address-space cap. Its Go runtime has already reserved more
// address space than a small cap allows (and would not start under
// some), so the cap is set now, and raised to what is reserved plus
// connectorHeadroom when it is below that.
func connectorHarden(limit int64) error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return err
	}
	if limit <= 0 {
		return nil
	}
	reserved, err := addressSpace()
	if err != nil {
		return err
	}
	m := uint64(max(limit, reserved+connectorHeadroom))
	return unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: m, Max: m})
}

// addressSpace is the size of this process's mappings, from
// /proc/self/statm (its first field, in pages).
func addressSpace() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/self/statm is empty")
	}
	pages, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// connectLoopback connects to port on this network namespace's
// 127.0.0.1 (or ::1), within wait.
func connectLoopback(port int, v6 bool, wait time.Duration) (int, error) {
	if port < 1 || port > 65535 {
		return -1, fmt.Errorf("port %d is not a TCP port", port)
	}
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	if v6 {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, err
	}
	err = unix.Connect(fd, sa)
	if err == unix.EINPROGRESS {
		err = awaitConnect(fd, wait)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// awaitConnect waits for a non-blocking connect to complete.
func awaitConnect(fd int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return unix.ETIMEDOUT
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == unix.EINTR || err == nil && n == 0 {
			continue
		}
		if err != nil {
			return err
		}
		soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return err
		}
		if soerr != 0 {
			return unix.Errno(soerr)
		}
		return nil
	}
}

// connector is bridle's end of a box's connector. What comes back is
// untrusted (the command can kill the connector, or take it over by
// ptrace): a reply is taken only for a request still waiting, and only
// a TCP socket connected to the loopback port asked for is used.
type connector struct {
	c *net.UnixConn
	// wmu is held while a request is written: one at a time on the
	// socket. A channel, so that a dial waiting for it sees ctx end.
	wmu chan struct{}

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan connectResult
	closed  bool
}

type connectResult struct {
	fd  int // -1 with err
	err error
}

// errConnectorGone is a dial's error once the box's connector is gone.
var errConnectorGone = errors.New("the box's connector is gone")

// newConnector takes over fd, bridle's end of the socket pair.
func newConnector(fd int) (*connector, error) {
	f := os.NewFile(uintptr(fd), "box-connector")
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := fc.(*net.UnixConn)
	if !ok {
		fc.Close()
		return nil, fmt.Errorf("the connector's socket is a %T, not a Unix socket", fc)
	}
	c := &connector{c: uc, wmu: make(chan struct{}, 1), pending: map[uint64]chan connectResult{}}
	go c.read()
	return c, nil
}

// read hands each reply to its request until the socket closes.
func (c *connector) read() {
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		// ReadMsgUnix takes descriptors close-on-exec: none reaches a
		// helper bridle starts meanwhile.
		n, oobn, _, _, err := c.c.ReadMsgUnix(buf, oob)
		fds := rightsOf(oob[:oobn])
		if err != nil {
			closeAll(fds)
			break
		}
		var rep connectReply
		if json.Unmarshal(buf[:n], &rep) != nil {
			closeAll(fds)
			continue
		}
		c.mu.Lock()
		ch := c.pending[rep.ID]
		delete(c.pending, rep.ID)
		c.mu.Unlock()
		res := connectResult{fd: -1}
		switch {
		case rep.Error != "":
			res.err = errors.New(rep.Error)
			closeAll(fds)
		case len(fds) != 1:
			res.err = fmt.Errorf("the connector answered with %d descriptors, not one", len(fds))
			closeAll(fds)
		default:
			res.fd = fds[0]
		}
		if ch == nil {
			closeAll([]int{res.fd})
			continue
		}
		ch <- res
	}
	c.close()
}

// dial asks the connector for a connection to port (on ::1 with v6) of
// its box, waiting until ctx ends.
func (c *connector) dial(ctx context.Context, port int, v6 bool) (*net.TCPConn, error) {
	ch := make(chan connectResult, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errConnectorGone
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	b, _ := json.Marshal(connectRequest{ID: id, Port: port, V6: v6})
	if err := c.write(ctx, b); err != nil {
		c.forget(id, ch)
		return nil, fmt.Errorf("ask the box's connector: %w", err)
	}
	var res connectResult
	select {
	case res = <-ch:
	case <-ctx.Done():
		c.forget(id, ch)
		return nil, ctx.Err()
	}
	if res.err != nil {
		return nil, res.err
	}
	return checkedConn(res.fd, port)
}

// write sends one request, or gives up when ctx ends: a connector that
// stops reading (the command can SIGSTOP it) holds neither the dial
// whose request fills its socket nor those waiting for their turn.
func (c *connector) write(ctx context.Context, b []byte) error {
	select {
	case c.wmu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.wmu }()
	c.c.SetWriteDeadline(time.Time{})
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.c.SetWriteDeadline(time.Now())
		close(interrupted)
	})
	_, _, err := c.c.WriteMsgUnix(b, nil, nil)
	if !stop() {
		// The deadline is set, or being set: wait for it, so that it
		// does not fall on the next request's write.
		<-interrupted
		if err != nil {
			return ctx.Err()
		}
	}
	return err
}

// forget withdraws request id; a reply already taken for it is closed.
func (c *connector) forget(id uint64, ch chan connectResult) {
	c.mu.Lock()
	_, waiting := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if waiting {
		return
	}
	// The reader (with a reply) or close (without) took the request:
	// whichever did puts its result on ch, once, right after. Waiting
	// for it is brief, and no descriptor a reply carries is left behind.
	res := <-ch
	closeAll([]int{res.fd})
}

// close ends the connector's socket; waiting dials fail.
func (c *connector) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- connectResult{fd: -1, err: errConnectorGone}
	}
	c.c.Close()
}

// checkedConn takes fd, from the connector, when it is a TCP socket
// connected to port on a loopback address; it is closed otherwise.
func checkedConn(fd, port int) (*net.TCPConn, error) {
	f := os.NewFile(uintptr(fd), "box-connection")
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("the connector answered with something that is not a connection: %w", err)
	}
	tc, ok := fc.(*net.TCPConn)
	if !ok {
		fc.Close()
		return nil, fmt.Errorf("the connector answered with a %T, not a TCP connection", fc)
	}
	ra, ok := tc.RemoteAddr().(*net.TCPAddr)
	if !ok || !ra.IP.IsLoopback() || ra.Port != port {
		tc.Close()
		return nil, fmt.Errorf("the connector answered with a connection to %v, not to loopback port %d", tc.RemoteAddr(), port)
	}
	return tc, nil
}

// rightsOf are the descriptors a message's control data carries.
func rightsOf(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func closeAll(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}
