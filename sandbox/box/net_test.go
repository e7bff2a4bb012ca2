//go:build linux

package box

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// listener counts connections to a loopback port on the host: the box
// must not reach it.
type listener struct {
	net.Listener
	accepted atomic.Int32
}

func hostListener(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{Listener: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

func (l *listener) port() int { return l.Addr().(*net.TCPAddr).Port }

// requireNetns skips when the doctor report says the machine has no
// network namespace, and says so.
func requireNetns(t testing.TB, b *Box) { requireLayer(t, b, "network namespace") }

// requireLayer skips when the doctor report says this box lacks a layer,
// and says so in the test output.
func requireLayer(t testing.TB, b *Box, name string) {
	t.Helper()
	for _, l := range b.Report().Layers {
		if l.Name == name && !l.OK {
			t.Skipf("this box has no %s (bridle doctor: %s; without it: %s): not tested here", name, l.Detail, l.Without)
		}
	}
}

func TestNoNetwork(t *testing.T) {
	if !hasTool("curl") {
		t.Fatal("curl is needed for this test (apt-get install curl)")
	}
	host := hostListener(t)
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			if mode == "namespaces" {
				requireNetns(t, b)
			}
			cmd := fmt.Sprintf(`curl -sS -m 3 http://127.0.0.1:%d/ ; echo "curl-loopback=$?"; curl -sS -m 3 http://192.0.2.1/ ; echo "curl-public=$?"`, host.port())
			o, out := marked(t, b, context.Background(), cmd, nil)
			if !strings.Contains(out, "curl-loopback=7") || !strings.Contains(out, "curl-public=7") {
				t.Errorf("curl reached something: %+v %q", o, out)
			}
			py := `/usr/bin/python3 -c "
import socket
for host in ('127.0.0.1', '192.0.2.1'):
    for kind in ('raw', 'udp'):
        try:
            if kind == 'raw':
                s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
                s.sendto(b'\x08\x00\xf7\xff\x00\x00\x00\x00bridle-probe', (host, 0))
            else:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.sendto(b'bridle-probe', (host, %d))
            print(kind, host, 'sent')
        except OSError as e:
            print(kind, host, 'refused', e)
"`
			_, out = marked(t, b, context.Background(), fmt.Sprintf(py, host.port()), nil)
			t.Logf("%s raw/udp: %s", mode, strings.TrimSpace(out))
			if mode == "fallback" && strings.Contains(out, "sent") {
				t.Errorf("without a network namespace, UDP and raw sockets must be refused: %q", out)
			}
			if mode == "namespaces" && strings.Contains(out, "192.0.2.1 sent") {
				t.Errorf("a packet left for a public address: %q", out)
			}
			if n := host.accepted.Load(); n != 0 {
				t.Fatalf("the host listener accepted %d connections from the box", n)
			}
		})
	}
}

// TestNoICMPReachesHost watches the host's loopback for the box's ICMP
// probe: inside a network namespace it goes to the box's own loopback.
func TestNoICMPReachesHost(t *testing.T) {
	b := New(Options{})
	requireNetns(t, b)
	pc, err := net.ListenPacket("ip4:icmp", "127.0.0.1")
	if err != nil {
		t.Skipf("cannot watch ICMP on the host (needs root or CAP_NET_RAW): %v", err)
	}
	defer pc.Close()
	got := make(chan bool, 1)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if strings.Contains(string(buf[:n]), "bridle-icmp-probe") {
				got <- true
				return
			}
		}
	}()
	marked(t, b, context.Background(), `/usr/bin/python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.sendto(b'\x08\x00\x00\x00\x00\x00\x00\x00bridle-icmp-probe', ('127.0.0.1', 0))
print('sent inside the box')
"`, nil)
	select {
	case <-got:
		t.Fatal("an ICMP packet from the box reached the host")
	case <-time.After(300 * time.Millisecond):
	}
}

func TestProxyAllowsOnlyListedHosts(t *testing.T) {
	if !hasTool("curl") {
		t.Fatal("curl is needed for this test")
	}
	var hits atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "hello from the host "+r.URL.Path)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			cmd := fmt.Sprintf(`curl -sS -m 5 --noproxy '' http://localhost:%[1]d/plain; echo; `+
				`curl -sS -m 5 --noproxy '' -p http://localhost:%[1]d/tunnel; echo; `+
				`curl -sS -m 5 --noproxy '' http://127.0.0.2:%[1]d/denied; echo "denied=$?"`, port)
			before := hits.Load()
			o, out := marked(t, b, context.Background(), cmd, func(s *Spec) { s.AllowHosts = []string{fmt.Sprintf("localhost:%d", port)} })
			if !strings.Contains(out, "hello from the host /plain") || !strings.Contains(out, "hello from the host /tunnel") {
				t.Fatalf("allowed host not reached: %q", out)
			}
			if !strings.Contains(out, "not in this session's allowed hosts") {
				t.Fatalf("denied host not refused: %q", out)
			}
			if got := hits.Load() - before; got != 2 {
				t.Fatalf("host server got %d requests, want 2", got)
			}
			if len(o.Denied) != 1 || o.Denied[0] != fmt.Sprintf("127.0.0.2:%d", port) {
				t.Fatalf("denied = %v", o.Denied)
			}
			if !strings.Contains(o.Summary(time.Second), "network access refused for 127.0.0.2") {
				t.Fatalf("summary %q", o.Summary(time.Second))
			}
		})
	}
}

func TestReportNamesEveryLayer(t *testing.T) {
	r := New(Options{NoNamespaces: true, NoSeccomp: true}).Report()
	text := r.String()
	for _, name := range []string{"user namespace", "network namespace", "pid namespace", "mount namespace", "process cap", "landlock", "seccomp", "cgroup limits",
		"read-only root", "hidden paths", "own /proc", "tmpfs limits", "nested user ns"} {
		if !strings.Contains(text, name) {
			t.Errorf("report lacks %s:\n%s", name, text)
		}
	}
	missing := strings.Join(r.MissingLayers(), "\n")
	for _, want := range []string{"network namespace: commands share the host network", "seccomp: "} {
		if !strings.Contains(missing, want) {
			t.Errorf("missing layers lack %q:\n%s", want, missing)
		}
	}
	if os.Getuid() == 0 && !strings.Contains(text, "RLIMIT_NPROC does not bind root") {
		// Root without namespaces has no process cap; the report must say so.
		t.Errorf("root without namespaces has no process cap; the report must say so:\n%s", text)
	}
}
