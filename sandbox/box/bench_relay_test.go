//go:build linux

package box

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The relay's benchmarks (docs/benchmarks.md, "The relay"): what a
// command pays to start when it reaches a serving box, what a fetch
// through the relay costs against one inside a single box, and what a
// serving box pays for its connector. Real boxes, real Python servers
// and clients run as the boxes' commands.

// relayServer listens on 127.0.0.1 at count ports from base, says
// "listening" once they all are, and serves the first: a request is a
// size and a newline, the answer that many zero bytes, then the end.
const relayServer = `import socket, sys
base, count = int(sys.argv[1]), int(sys.argv[2])
socks = []
for port in range(base, base + count):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(128)
    socks.append(s)
print("listening", flush=True)
data = memoryview(bytes(16 << 20))
while True:
    c, _ = socks[0].accept()
    req = b""
    while not req.endswith(b"\n"):
        part = c.recv(64)
        if not part:
            break
        req += part
    if req.endswith(b"\n"):
        c.sendall(data[:int(req)])
    c.close()
`

// relayClient fetches size bytes count times from 127.0.0.1:port, one
// connection each, after one fetch not timed, and prints the seconds
// the timed ones took.
const relayClient = `import socket, sys, time
port, size, count = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
buf = bytearray(1 << 20)
req = b"%d\n" % size
def fetch():
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(req)
    got = 0
    while True:
        n = c.recv_into(buf)
        if n == 0:
            break
        got += n
    c.close()
    if got != size:
        sys.exit("fetched %d bytes, want %d" % (got, size))
fetch()
start = time.perf_counter()
for _ in range(count):
    fetch()
print("elapsed %.9f" % (time.perf_counter() - start), flush=True)
`

// relayScripts writes the server and the client into dir.
func relayScripts(b *testing.B, dir string) {
	b.Helper()
	for name, text := range map[string]string{"server.py": relayServer, "client.py": relayClient} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRun runs command in bx and fails the benchmark unless it exits 0;
// it returns the command's output.
func benchRun(b *testing.B, bx *Box, dir, command string, tweak func(*Spec)) string {
	b.Helper()
	var out syncBuffer
	s := Spec{Command: command, Dir: dir, Writable: []string{dir}, Output: &out, Timeout: 5 * time.Minute,
		MemoryBytes: 1 << 30, Processes: 512, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir}}
	tweak(&s)
	o, err := bx.Run(context.Background(), s)
	if err != nil || o.ExitCode != 0 {
		b.Fatalf("Run(%q): %v, %+v: %q", command, err, o, out.String())
	}
	return out.String()
}

// pause waits, untimed, as the model's answer does between two tool
// calls, so that each run finds the box's spare helper ready (see
// BenchmarkSpawn's after-a-pause).
func pause(b *testing.B) {
	b.StopTimer()
	time.Sleep(100 * time.Millisecond)
	b.StartTimer()
}

// BenchmarkReachStart is what a command start pays for reaching: a
// `true` with Spec.Reach naming one running serving box that listens on
// 1 or 64 ports, against the same `true` without Reach. Each iteration
// runs the three in turn, each after a pause; the figures are medians.
// What reaching adds: the serving box's listening ports listed
// (BenchmarkMicroReachPlan), the helper's listeners opened in the new
// box and handed to bridle, and the relay's goroutines started and
// stopped.
func BenchmarkReachStart(b *testing.B) {
	bx := netBox(b)
	dir := b.TempDir()
	relayScripts(b, dir)
	one, _ := serving(b, bx, dir, "exec /usr/bin/python3 -u server.py 9000 1", "listening")
	many, _ := serving(b, bx, dir, "exec /usr/bin/python3 -u server.py 9100 64", "listening")
	if n := len(many.listening()); n != 64 {
		b.Fatalf("the serving box listens on %d ports, want 64", n)
	}
	cases := []struct {
		metric string
		reach  []*Loopback
	}{
		{"ms-no-reach", nil},
		{"ms-reach-1-port", []*Loopback{one}},
		{"ms-reach-64-ports", []*Loopback{many}},
	}
	took := make([][]time.Duration, len(cases))
	for b.Loop() {
		for i, c := range cases {
			pause(b)
			start := time.Now()
			benchRun(b, bx, dir, "true", func(s *Spec) { s.Reach = c.reach })
			took[i] = append(took[i], time.Since(start))
		}
	}
	for i, c := range cases {
		b.ReportMetric(float64(median(took[i]).Microseconds())/1000, c.metric)
	}
}

// BenchmarkMicroReachPlan is bridle's own share of a reaching command's
// start (micro: no command runs): the serving box's listening ports
// listed (through its diag socket, diag_linux.go), the relay planned,
// its watch of the serving box started and stopped. The helper's
// listeners are not opened.
func BenchmarkMicroReachPlan(b *testing.B) {
	bx := netBox(b)
	dir := b.TempDir()
	relayScripts(b, dir)
	for _, ports := range []int{1, 64} {
		l, _ := serving(b, bx, dir, fmt.Sprintf("exec /usr/bin/python3 -u server.py %d %d", 9000+100*ports, ports), "listening")
		b.Run(fmt.Sprintf("ports=%d", ports), func(b *testing.B) {
			for b.Loop() {
				r := newRelay([]*Loopback{l})
				if r == nil || len(r.ports) != ports {
					b.Fatalf("the relay plans %v, want %d ports", r, ports)
				}
				r.close()
			}
		})
	}
}

// BenchmarkReachFetch is a fetch through the relay: a client in a box
// whose Reach names a serving box fetches from the server there (1 KiB
// 200 times, or 16 MiB 8 times, a connection each), against the same
// client and server in one box, where no relay is. Each iteration runs
// both, each after a pause; the figures are the client's own timing of
// its fetches (after one not timed), medians. ns/op is the two boxes'
// whole runs. One serving box serves every run (-count included), as a
// dev server does a session: kB-connector-rss and -anon are its
// connector's VmRSS and RssAnon after all the connections so far.
func BenchmarkReachFetch(b *testing.B) {
	bx := netBox(b)
	dir := b.TempDir()
	relayScripts(b, dir)
	l, _ := serving(b, bx, dir, "/usr/bin/python3 -u server.py 9000 1 # reach-fetch-server", "listening")
	for _, c := range []struct {
		name        string
		size, count int
	}{
		{"1KiB", 1 << 10, 200},
		{"16MiB", 16 << 20, 8},
	} {
		b.Run(c.name, func(b *testing.B) {
			client := fmt.Sprintf("/usr/bin/python3 client.py 9000 %d %d", c.size, c.count)
			// The server in the client's box: its "listening" comes
			// through a FIFO, so the client starts once it listens.
			oneBox := `mkfifo "$TMPDIR/up" && { /usr/bin/python3 -u server.py 9000 1 > "$TMPDIR/up" & } && read up < "$TMPDIR/up" && ` + client
			var relayed, direct []time.Duration
			for b.Loop() {
				pause(b)
				relayed = append(relayed, elapsed(b, benchRun(b, bx, dir, client, func(s *Spec) { s.Reach = []*Loopback{l} })))
				pause(b)
				direct = append(direct, elapsed(b, benchRun(b, bx, dir, oneBox, func(*Spec) {})))
			}
			r, d := median(relayed), median(direct)
			if c.size <= 1<<10 {
				b.ReportMetric(float64(r.Microseconds())/float64(c.count), "us-a-fetch-relayed")
				b.ReportMetric(float64(d.Microseconds())/float64(c.count), "us-a-fetch-one-box")
			} else {
				mb := float64(c.size*c.count) / 1e6
				b.ReportMetric(mb/r.Seconds(), "MB/s-relayed")
				b.ReportMetric(mb/d.Seconds(), "MB/s-one-box")
			}
			conn := connectorOf(b, "reach-fetch-server")
			b.ReportMetric(float64(statusKB(b, conn, "VmRSS")), "kB-connector-rss")
			b.ReportMetric(float64(statusKB(b, conn, "RssAnon")), "kB-connector-anon")
		})
	}
}

// elapsed reads the client's "elapsed SECONDS" line.
func elapsed(b *testing.B, out string) time.Duration {
	b.Helper()
	_, s, ok := strings.Cut(out, "elapsed ")
	sec, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if !ok || err != nil {
		b.Fatalf("the client did not say how long it took: %q", out)
	}
	return time.Duration(sec * float64(time.Second))
}

// statusKB is a field of process pid's /proc/PID/status, in kB: VmRSS,
// or RssAnon (its private share: the rest are the binary's pages, which
// bridle shares).
func statusKB(b *testing.B, pid int, field string) int {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				b.Fatalf("%s of %d: %q", field, pid, line)
			}
			return kb
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// BenchmarkServesStart is what a box started in the background pays for
// its connector: the time from Run to the command's first output, with
// Spec.Serves (the helper starts the connector and waits until it has
// locked itself before the command runs) and without, and from the end
// of the command's input to Run's return (the box torn down, the
// connector with it). Each iteration runs both, each after a pause; the
// figures are medians. kB-connector-rss and -anon are the connector's
// VmRSS and RssAnon while the command runs.
func BenchmarkServesStart(b *testing.B) {
	bx := netBox(b)
	dir := b.TempDir()
	const command = "echo up; read line; exit 0 # serves-start"
	var rss, anon []int
	took := map[bool][2][]time.Duration{}
	for b.Loop() {
		for _, serves := range []bool{false, true} {
			pause(b)
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			out := &firstWrite{wrote: make(chan struct{})}
			s := Spec{Command: command, Dir: dir, Writable: []string{dir}, Output: out, StdinPipe: r, Timeout: time.Minute,
				MemoryBytes: 1 << 30, Processes: 512, Env: []string{"PATH=/usr/bin:/bin"}}
			if serves {
				s.Serves = func(*Loopback) {}
			}
			done := make(chan Outcome, 1)
			start := time.Now()
			go func() {
				o, err := bx.Run(context.Background(), s)
				if err != nil {
					b.Error(err)
				}
				done <- o
			}()
			var o Outcome
			select {
			case <-out.wrote:
			case o = <-done:
				b.Fatalf("the command ended before it said anything: %+v", o)
			}
			toStart := out.at.Sub(start)
			if serves {
				b.StopTimer()
				conn := connectorOf(b, "serves-start")
				rss = append(rss, statusKB(b, conn, "VmRSS"))
				anon = append(anon, statusKB(b, conn, "RssAnon"))
				b.StartTimer()
			}
			closed := time.Now()
			w.Close()
			o = <-done
			toEnd := time.Since(closed)
			r.Close()
			if o.ExitCode != 0 {
				b.Fatalf("the command failed: %+v", o)
			}
			t := took[serves]
			t[0], t[1] = append(t[0], toStart), append(t[1], toEnd)
			took[serves] = t
		}
	}
	for _, serves := range []bool{false, true} {
		name := "plain"
		if serves {
			name = "serves"
		}
		b.ReportMetric(float64(median(took[serves][0]).Microseconds())/1000, "ms-to-start-"+name)
		b.ReportMetric(float64(median(took[serves][1]).Microseconds())/1000, "ms-to-end-"+name)
	}
	b.ReportMetric(float64(median(rss)), "kB-connector-rss")
	b.ReportMetric(float64(median(anon)), "kB-connector-anon")
}

// firstWrite records when the command first wrote.
type firstWrite struct {
	once  sync.Once
	at    time.Time
	wrote chan struct{}
}

func (f *firstWrite) Write(p []byte) (int, error) {
	f.once.Do(func() {
		f.at = time.Now()
		close(f.wrote)
	})
	return len(p), nil
}
