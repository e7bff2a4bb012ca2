package box

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The listening ports of a serving box, asked of the kernel. Its helper
// makes a NETLINK_SOCK_DIAG socket before it runs the command and hands
// it to bridle (readReports); a netlink socket answers for the network
// namespace it was made in, whoever holds it, so bridle, which cannot
// enter that namespace, asks through it. An inet_diag dump of the TCP
// sockets in state LISTEN is answered from the kernel's listening hash
// alone, where reading /proc/PID/net/tcp walks the whole established
// hash, which every namespace shares here (~7 ms a box; see
// docs/benchmarks.md, "The relay to background servers"). The answer is
// parsed strictly: any surprise closes the socket, and the box's
// /proc/PID/net/tcp and tcp6 are read instead, from then on.

const (
	// sizeofInetDiagReqV2 and sizeofInetDiagMsg are the sizes of struct
	// inet_diag_req_v2 and inet_diag_msg (linux/inet_diag.h), which
	// golang.org/x/sys does not define.
	sizeofInetDiagReqV2 = 56
	sizeofInetDiagMsg   = 72
	// tcpListen is TCP_LISTEN (include/net/tcp_states.h).
	tcpListen = 10
	// diagWait bounds one listing: the kernel answers at once, but a
	// listing must never hang a command's start.
	diagWait = time.Second
	// diagBuffer holds the largest datagram of a netlink dump (the
	// kernel makes them at most 32 KiB).
	diagBuffer = 32 << 10
)

// errDiagCut is the error of a listing that reached maxListing bytes
// before its end.
var errDiagCut = errors.New("the listing is longer than bridle reads")

// sendDiag makes the box's diag socket and hands it to bridle; without
// one (a kernel without netlink sock_diag), bridle reads /proc. Its copy
// is closed at once: the command never holds it.
func sendDiag() {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return
	}
	send(helperReport{Diag: true}, fd)
	unix.Close(fd)
}

// checkDiag tells whether fd, as a helper passed it, is a
// NETLINK_SOCK_DIAG socket.
func checkDiag(fd int) error {
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return fmt.Errorf("not a socket: %w", err)
	}
	proto, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if err != nil {
		return fmt.Errorf("its protocol: %w", err)
	}
	if domain != unix.AF_NETLINK || proto != unix.NETLINK_SOCK_DIAG {
		return fmt.Errorf("a socket of family %d, protocol %d, not NETLINK_SOCK_DIAG", domain, proto)
	}
	return nil
}

// diagListening lists through fd the TCP sockets listening in its
// namespace, IPv4 then IPv6, into ports. seq numbers the first request
// (the second is seq+1); deadline bounds the whole listing.
func diagListening(fd int, seq uint32, deadline time.Time, ports portSet) error {
	buf := make([]byte, diagBuffer)
	read := 0
	for i, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		s := seq + uint32(i)
		if err := unix.Sendto(fd, diagRequest(family, s), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return fmt.Errorf("ask the kernel: %w", err)
		}
		for done := false; !done; {
			n, err := receiveDiag(fd, buf, deadline)
			if err != nil {
				return err
			}
			if read += n; read > maxListing {
				return errDiagCut
			}
			if done, err = parseDiag(buf[:n], family, s, ports); err != nil {
				return err
			}
		}
	}
	return nil
}

// diagRequest is a dump request for the TCP sockets of family in state
// LISTEN: a netlink header and an inet_diag_req_v2, in the machine's
// byte order (the socket id, all zero, is not looked at by a dump).
func diagRequest(family uint8, seq uint32) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN+sizeofInetDiagReqV2)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(b[8:], seq)
	r := b[unix.NLMSG_HDRLEN:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 1<<tcpListen)
	return b
}

// receiveDiag waits until deadline for one datagram from the kernel.
func receiveDiag(fd int, buf []byte, deadline time.Time) (int, error) {
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return 0, errors.New("the kernel did not answer in time")
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		ready, err := unix.Poll(pfd, int(wait.Milliseconds())+1)
		if err == unix.EINTR || err == nil && ready == 0 {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("wait for the kernel's answer: %w", err)
		}
		n, _, flags, from, err := unix.Recvmsg(fd, buf, nil, unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil:
			return 0, fmt.Errorf("read the kernel's answer: %w", err)
		case flags&unix.MSG_TRUNC != 0:
			return 0, errors.New("an answer longer than its buffer")
		}
		if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
			return 0, errors.New("an answer that is not the kernel's")
		}
		return n, nil
	}
}

// parseDiag reads one datagram of the kernel's answer to the request seq
// for family's listening TCP sockets into ports; done at its end. Any
// message it does not expect is an error.
func parseDiag(b []byte, family uint8, seq uint32, ports portSet) (done bool, err error) {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return false, fmt.Errorf("a malformed answer: %w", err)
	}
	whole := 0
	for _, m := range msgs {
		whole += int(m.Header.Len+unix.NLMSG_ALIGNTO-1) &^ (unix.NLMSG_ALIGNTO - 1)
	}
	if whole != len(b) {
		return false, fmt.Errorf("a malformed answer: %d bytes past its messages", len(b)-whole)
	}
	for _, m := range msgs {
		if m.Header.Seq != seq {
			return false, fmt.Errorf("an answer to request %d, not %d", m.Header.Seq, seq)
		}
		if done {
			return false, errors.New("an answer past its end")
		}
		switch m.Header.Type {
		case unix.NLMSG_DONE:
			if len(m.Data) >= 4 && int32(binary.NativeEndian.Uint32(m.Data)) != 0 {
				return false, fmt.Errorf("the dump failed: %w", syscall.Errno(-int32(binary.NativeEndian.Uint32(m.Data))))
			}
			done = true
		case unix.NLMSG_ERROR:
			if len(m.Data) < 4 {
				return false, errors.New("a short error message")
			}
			return false, fmt.Errorf("the kernel refused: %w", syscall.Errno(-int32(binary.NativeEndian.Uint32(m.Data))))
		case unix.SOCK_DIAG_BY_FAMILY:
			d := m.Data
			if len(d) < sizeofInetDiagMsg {
				return false, fmt.Errorf("a socket of %d bytes, want %d", len(d), sizeofInetDiagMsg)
			}
			if d[0] != family {
				return false, fmt.Errorf("a socket of family %d, asked for %d", d[0], family)
			}
			if d[1] != tcpListen {
				continue
			}
			// inet_diag_sockid at 4: sport, dport (big-endian), src.
			port := int(binary.BigEndian.Uint16(d[4:6]))
			ip := net.IP(d[8:24])
			if family == unix.AF_INET {
				ip = net.IP(d[8:12])
			}
			ports.add(ip, port)
		default:
			return false, fmt.Errorf("a message of type %d", m.Header.Type)
		}
	}
	return done, nil
}
