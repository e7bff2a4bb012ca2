//go:build linux

package box

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// modes are the two ways a box runs: with namespaces (this machine's
// default) and without (the fallback for machines that lack them).
func modes(t *testing.T) map[string]*Box {
	t.Helper()
	return map[string]*Box{"namespaces": New(Options{}), "fallback": New(Options{NoNamespaces: true})}
}

// marked runs a command whose processes all carry a unique variable, and
// then fails the test if any process with it is still alive.
func marked(t *testing.T, b *Box, ctx context.Context, command string, tweak func(*Spec)) (Outcome, string) {
	t.Helper()
	mark := fmt.Sprintf("BRIDLE_TEST_MARK=%d-%d", os.Getpid(), time.Now().UnixNano())
	dir := t.TempDir()
	out := &capped{max: 1 << 20}
	s := Spec{Command: command, Dir: dir, Writable: []string{dir}, Output: out, Timeout: 20 * time.Second,
		MemoryBytes: 1 << 30, Processes: 400, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", mark}}
	if tweak != nil {
		tweak(&s)
	}
	o, err := b.Run(ctx, s)
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	if left := survivors(mark); len(left) > 0 {
		t.Fatalf("processes survived the call: %v (output %q)", left, out.String())
	}
	return o, out.String()
}

// survivors lists live processes whose environment holds mark, once
// those found have had a second to exit: the kernel may still be tearing
// down a namespace when Run returns. It waits on each process's pidfd,
// which becomes readable when the process exits.
func survivors(mark string) []string {
	deadline := time.Now().Add(time.Second)
	var left []string
	for _, pid := range markedProcs(mark) {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, int(max(0, time.Until(deadline).Milliseconds())))
			if err == unix.EINTR {
				continue
			}
			if n == 0 && err == nil {
				cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				left = append(left, strconv.Itoa(pid)+":"+strings.ReplaceAll(string(cmd), "\x00", " "))
			}
			break
		}
		unix.Close(fd)
	}
	return left
}

// markedProcs lists the processes (zombies too) whose environment holds mark.
func markedProcs(mark string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil && bytes.Contains(env, []byte(mark)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// capped keeps the first max bytes and counts the rest.
type capped struct {
	syncBuffer
	max   int
	total atomic.Int64
}

func (c *capped) Write(p []byte) (int, error) {
	if n := c.total.Add(int64(len(p))); n-int64(len(p)) < int64(c.max) {
		c.syncBuffer.Write(p[:min(len(p), c.max-int(n-int64(len(p))))])
	}
	return len(p), nil
}

func TestContainment(t *testing.T) {
	cases := []struct {
		name    string
		command string
		tweak   func(*Spec)
		check   func(t *testing.T, o Outcome, out string)
	}{
		// The call must come back (ended or timed out) with nothing left;
		// marked checks the second part.
		{"fork bomb", `bomb() { bomb | bomb & }; bomb; sleep 3; echo survived`, func(s *Spec) { s.Timeout = 8 * time.Second }, func(t *testing.T, o Outcome, out string) {
			if o.Cancelled {
				t.Errorf("fork bomb: %+v", o)
			}
		}},
		{"4 GiB allocation", `/usr/bin/python3 -c "b = bytearray(4 << 30); print('allocated')"`, nil, func(t *testing.T, o Outcome, out string) {
			if strings.Contains(out, "allocated") || !strings.Contains(out, "MemoryError") || o.ExitCode == 0 {
				t.Errorf("allocation not refused: %+v %q", o, out)
			}
		}},
		{"yes forever", `yes`, func(s *Spec) { s.Timeout = time.Second }, func(t *testing.T, o Outcome, out string) {
			if !o.TimedOut || !strings.HasPrefix(out, "y\ny\n") {
				t.Errorf("yes not timed out: %+v", o)
			}
			if !strings.Contains(o.Summary(time.Second), "timed out after 1s") {
				t.Errorf("summary %q", o.Summary(time.Second))
			}
		}},
		{"double-forking daemon", `(setsid sh -c 'sleep 300 & echo daemon $!' &); sleep 0.3; echo parent done`, nil, func(t *testing.T, o Outcome, out string) {
			// Waiting for the daemon would end in the 20 s timeout.
			if o.ExitCode != 0 || o.TimedOut || !strings.Contains(out, "daemon") || !strings.Contains(out, "parent done") {
				t.Errorf("daemon case: %+v %q", o, out)
			}
		}},
		{"daemon holding the output open", `setsid sh -c 'while :; do echo tick; sleep 0.1; done' & sleep 0.3`, nil, func(t *testing.T, o Outcome, out string) {
			if o.TimedOut || o.ExitCode != 0 {
				t.Errorf("call waited for the daemon: %+v", o)
			}
		}},
	}
	for mode, b := range modes(t) {
		for _, c := range cases {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				if c.name == "fork bomb" {
					// Without a process cap a fork bomb fills the machine's
					// process table before the timeout ends it.
					requireLayer(t, b, "process cap")
				}
				o, out := marked(t, b, context.Background(), c.command, c.tweak)
				c.check(t, o, out)
			})
		}
		t.Run(mode+"/cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			o, _ := marked(t, b, ctx, `sleep 100 & sleep 100`, nil)
			if !o.Cancelled || o.TimedOut {
				t.Errorf("cancel: %+v", o)
			}
		})
	}
}

func TestWritesConfined(t *testing.T) {
	outside := t.TempDir()
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			victim := filepath.Join(outside, mode)
			o, out := marked(t, b, context.Background(),
				`echo in > inside.txt && echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"; echo out > `+victim+`; echo $?; mkdir `+victim+`.d; echo $?`, nil)
			if _, err := os.Stat(victim); err == nil {
				t.Fatalf("wrote outside the workspace: %+v %q", o, out)
			}
			if _, err := os.Stat(victim + ".d"); err == nil {
				t.Fatal("made a directory outside the workspace")
			}
			// Landlock says EACCES; the read-only root, under it, EROFS.
			if !strings.Contains(out, "tmp\n") || !(strings.Contains(out, "Permission denied") || strings.Contains(out, "Read-only file system")) {
				t.Fatalf("output %q", out)
			}
		})
	}
}

// TestSharedMemoryPrivate: the machine's /dev/shm is outside the
// workspace, so the box must not write it; with namespaces the box gets a
// /dev/shm of its own that POSIX shared memory can use.
func TestSharedMemoryPrivate(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("this machine has no /dev/shm")
	}
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			name := fmt.Sprintf("bridle-test-%d-%s", os.Getpid(), mode)
			host := filepath.Join("/dev/shm", name)
			t.Cleanup(func() { os.Remove(host) })
			o, out := marked(t, b, context.Background(), `echo x > /dev/shm/`+name+` && cat /dev/shm/`+name+` && echo WROTE`, nil)
			if _, err := os.Stat(host); err == nil {
				t.Fatalf("wrote the machine's /dev/shm: %+v %q", o, out)
			}
			own := slices.ContainsFunc(o.Applied, func(a string) bool { return strings.HasPrefix(a, "private /dev/shm") })
			if mode == "namespaces" && !own {
				t.Fatalf("no private /dev/shm with namespaces: applied %v, missing %v", o.Applied, o.Missing)
			}
			if own != strings.Contains(out, "WROTE") {
				t.Fatalf("private /dev/shm %v but output %q", own, out)
			}
			if own {
				// What uses it in practice: a multiprocessing lock is a POSIX semaphore.
				_, out := marked(t, b, context.Background(), `/usr/bin/python3 -c "import multiprocessing; multiprocessing.Lock(); print('locked')"`, nil)
				if !strings.Contains(out, "locked") {
					t.Errorf("multiprocessing.Lock on the private /dev/shm: %q", out)
				}
			}
			if !own && !slices.ContainsFunc(o.Missing, func(m string) bool { return strings.Contains(m, "/dev/shm") }) {
				t.Errorf("no private /dev/shm and the result does not say so: missing %v", o.Missing)
			}
		})
	}
}

// TestNoTerminalNoInput: a command that waits for input or a terminal
// (a pager, a password prompt) gets end of file at once, not a hang, even
// when bridle itself has one. The test runs itself again on a
// pseudo-terminal that is its controlling terminal and its stdin.
func TestNoTerminalNoInput(t *testing.T) {
	if os.Getenv("BRIDLE_TEST_ON_PTY") == "" {
		onPTY(t, "^TestNoTerminalNoInput$")
		return
	}
	if !isTerminal(0) {
		t.Fatal("the re-run test has no terminal on stdin")
	}
	if f, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err != nil {
		t.Fatalf("the re-run test has no controlling terminal: %v", err)
	} else {
		f.Close()
	}
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			o, out := marked(t, b, context.Background(),
				`readlink /proc/self/fd/0; if read line; then echo GOT; else echo EOF; fi; tty; echo x > /dev/tty || echo NOTTY`, nil)
			if o.TimedOut || !strings.HasPrefix(out, "/dev/null\nEOF\nnot a tty\n") || !strings.Contains(out, "NOTTY") {
				t.Fatalf("outcome %+v output %q", o, out)
			}
		})
	}
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// onPTY runs the named tests of this binary again in a new session whose
// controlling terminal is a fresh pseudo-terminal, and fails if they fail.
func onPTY(t *testing.T, run string) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("name the pseudo-terminal: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pseudo-terminal: %v", err)
	}
	defer pts.Close()
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "BRIDLE_TEST_ON_PTY=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	// Drain what the child might echo to the terminal.
	go io.Copy(io.Discard, ptmx)
	if err := cmd.Run(); err != nil {
		t.Fatalf("on a terminal: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "--- PASS") {
		t.Fatalf("on a terminal, no test passed:\n%s", out.String())
	}
}

func TestNoCapabilitiesLeft(t *testing.T) {
	b := New(Options{})
	o, out := marked(t, b, context.Background(), `grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status; echo 4194304 > /proc/sys/kernel/pid_max && echo RAISED`, nil)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "Cap") && !strings.HasSuffix(l, "0000000000000000") {
			t.Errorf("capability left: %s (%+v)", l, o)
		}
	}
	if strings.Contains(out, "RAISED") {
		t.Error("the command raised its own process cap")
	}
}

func TestUnixSocketsDenied(t *testing.T) {
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			py := `/usr/bin/python3 -c "import socket; socket.socket(socket.AF_UNIX); print('created')"`
			_, out := marked(t, b, context.Background(), py, nil)
			if strings.Contains(out, "created") {
				t.Fatalf("unix socket created: %q", out)
			}
			_, out = marked(t, b, context.Background(), py, func(s *Spec) { s.AllowUnixSockets = true })
			if !strings.Contains(out, "created") {
				t.Fatalf("allowed unix socket refused: %q", out)
			}
		})
	}
}

func TestEnvironmentIsOnlyTheSpec(t *testing.T) {
	t.Setenv("BRIDLE_TEST_PARENT_SECRET", "parent-secret-value")
	_, out := marked(t, New(Options{}), context.Background(), `env`, nil)
	if strings.Contains(out, "parent-secret-value") {
		t.Fatalf("parent environment leaked: %q", out)
	}
	if !strings.Contains(out, "TMPDIR=") {
		t.Fatalf("no TMPDIR: %q", out)
	}
}

func hasTool(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// TestKillSessionCatchesOtherGroups checks the last resort of the
// fallback: when the supervisor is gone, bridle kills every process group
// of the helper's session, job-control groups included.
func TestKillSessionCatchesOtherGroups(t *testing.T) {
	mark := fmt.Sprintf("BRIDLE_TEST_MARK=session-%d", time.Now().UnixNano())
	// Three job-control groups, then a line once the shell has forked
	// them all.
	cmd := exec.Command("/bin/sh", "-c", "set -m; sleep 100 & sleep 100 & sleep 100 & echo started; wait")
	cmd.Env = []string{"PATH=/usr/bin:/bin", mark}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("the shell said %q, %v, not that it started its jobs", line, err)
	}
	killSession(cmd.Process.Pid)
	cmd.Wait()
	if left := survivors(mark); len(left) > 0 {
		t.Fatalf("left after killSession: %v", left)
	}
}
