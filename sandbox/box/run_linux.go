package box

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// nsFlags are the namespaces a box gets: network (no network), PID (the
// box dies whole with its first process), IPC (no shared memory with the
// desktop) and mount (a /dev/shm of its own, so POSIX shared memory works
// without a writable directory outside the workspace).
const nsFlags = unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS

// probeMachine finds which namespaces a helper can be started in.
func (b *Box) probeMachine() {
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		// A helper whose program did not call MaybeRunHelper first (a
		// test binary without it in TestMain) would run the program
		// again, start a helper of its own, and so on until the machine
		// has no processes left.
		fmt.Fprintln(os.Stderr, "box: this process was started as a box helper but its main (or TestMain) does not call box.MaybeRunHelper first")
		os.Exit(2)
	}
	m := machine{seccomp: seccompAvailable()}
	if abi, err := ll.LandlockGetABIVersion(); err == nil {
		m.landlock = abi
	}
	if b.opts.NoCgroup {
		m.cgroupErr = "switched off"
	} else {
		m.cgroup, m.cgroupErr = findCgroup()
	}
	// Writes are watched through a seccomp listener, which the probe
	// tries as it tries the namespaces.
	writes := m.seccomp && !b.opts.NoSeccomp
	m.writesErr = errors.New("seccomp is not available")
	if b.opts.NoSeccomp {
		m.writesErr = errors.New("seccomp is switched off")
	}
	if !b.opts.NoNamespaces {
		err, werr := startProbe(nsFlags|unix.CLONE_NEWUSER, true, writes)
		switch {
		case err == nil:
			m.cloneflags, m.userns = nsFlags|unix.CLONE_NEWUSER, true
		default:
			if os.Getuid() == 0 {
				var rootErr error
				if rootErr, werr = startProbe(nsFlags, false, writes); rootErr == nil {
					m.cloneflags = nsFlags
					m.nsErr = fmt.Sprintf("user namespaces: %v", err)
					break
				}
			}
			m.nsErr = err.Error()
			_, werr = startProbe(0, false, writes)
		}
		if writes {
			m.writesErr = werr
		}
	} else {
		m.nsErr = "switched off"
		if writes {
			_, m.writesErr = startProbe(0, false, true)
		}
	}
	b.caps = m
}

// WatchesWrites says why this machine's box cannot tell a Spec's Writes
// what its commands change (nil when it can).
func (b *Box) WatchesWrites() error {
	b.once.Do(b.probeMachine)
	return b.caps.writesErr
}

// sysProcAttr starts a helper in the given namespaces, mapped to the
// caller's own user and group.
func sysProcAttr(flags uintptr, userns bool) *syscall.SysProcAttr {
	// If bridle dies, the helper dies too: a namespaced helper is the
	// command (PID 1), and its death takes the whole box; a supervisor
	// gets SIGTERM, on which it kills what it supervises.
	death := syscall.SIGKILL
	if flags == 0 {
		death = syscall.SIGTERM
	}
	a := &syscall.SysProcAttr{Setsid: true, Cloneflags: flags, Pdeathsig: death}
	if userns {
		uid, gid := os.Getuid(), os.Getgid()
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		if uid != 0 {
			// An unprivileged helper keeps, through exec, the capabilities
			// it needs in its own namespaces: loopback up, pid_max, and
			// dropping the rest.
			a.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN, unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
		}
	}
	return a
}

// startProbe starts a helper with flags and waits for it. With writes,
// the helper also tries the watch of writes (probeWrites) and writesErr
// says why it failed, if it did.
func startProbe(flags uintptr, userns, writes bool) (err, writesErr error) {
	ctl, child, err := controlPair()
	if err != nil {
		return err, err
	}
	defer ctl.Close()
	args := []string{helperArg, "probe"}
	var dir string
	if writes {
		if dir, err = os.MkdirTemp("", "bridle-probe-"); err != nil {
			return err, err
		}
		defer os.RemoveAll(dir)
		args = append(args, "writes", dir)
	}
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{child}
	cmd.SysProcAttr = sysProcAttr(flags, userns)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	child.Close()
	if err != nil {
		return fmt.Errorf("start a helper in new namespaces: %w", err), nil
	}
	seen := &probeSeen{}
	var wt *watch
	reports := make(chan helperReport, 1)
	ctlFD := int(ctl.Fd())
	go func() {
		reports <- readReports(ctlFD, receivers{writes: func(fd int) { wt = serveWrites(context.Background(), fd, seen, []string{dir}, "") }})
	}()
	err = cmd.Wait()
	rep := <-reports // the helper is gone, and its end of the socket with it
	if wt != nil {
		wt.stop()
	}
	if err != nil {
		return fmt.Errorf("helper in new namespaces: %w (is bridle's main calling box.MaybeRunHelper?)", err), nil
	}
	if !writes {
		return nil, nil
	}
	switch {
	case rep.Unwatched != "":
		return nil, errors.New(rep.Unwatched)
	case wt == nil:
		return nil, errors.New("no seccomp listener came back from the probe")
	case seen.path != filepath.Join(dir, "probe"):
		return nil, fmt.Errorf("the watch did not find the file a probe wrote (%q)", seen.why)
	}
	return nil, nil
}

// probeSeen is the probe's Writes: the file it was told of.
type probeSeen struct{ path, why string }

func (p *probeSeen) Changing(_ context.Context, c Change) {
	if c.Path != "" {
		p.path = c.Path
	}
	if c.Unknown != "" {
		p.why = c.Unknown
	}
}

func configFile(cfg helperConfig) (*os.File, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("bridle-box", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "bridle-box-config")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func controlPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "box-control"), os.NewFile(uintptr(fds[1]), "box-control-child"), nil
}

// Run runs one command in the box and returns how it ended. An error means
// the box could not be set up; the command's own failure is in Outcome.
func (b *Box) Run(ctx context.Context, s Spec) (Outcome, error) {
	b.once.Do(b.probeMachine)
	m := b.caps
	start := time.Now()
	if s.Dir == "" || len(s.Writable) == 0 {
		return Outcome{}, errors.New("box: a command needs a directory and a workspace")
	}
	tmp, err := os.MkdirTemp("", "bridle-box-")
	if err != nil {
		return Outcome{}, fmt.Errorf("box: private temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	namespaced := m.cloneflags != 0
	cfg := b.helperConfig(s, tmp)
	var out Outcome
	px, err := b.proxyFor(s, &cfg)
	if err != nil {
		return Outcome{}, err
	}
	if px != nil {
		defer px.close()
	}
	var rl *relay
	if namespaced {
		// The ports the boxes in reach listen on now.
		if rl = newRelay(s.Reach); rl != nil {
			cfg.Relay = rl.ports
			defer rl.close()
		}
		cfg.Connector = s.Serves != nil
	}
	cfgFile, err := configFile(cfg)
	if err != nil {
		return Outcome{}, fmt.Errorf("box: %w", err)
	}
	defer cfgFile.Close()

	runCtx := ctx
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	// The command writes stdout and stderr to one pipe, interleaved as
	// written; the helper puts it on its descriptors 1 and 2.
	pr, pw, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("box: output pipe: %w", err)
	}
	defer pr.Close()
	std := []*os.File{pw}
	if s.StdinPipe != nil {
		// stdin, stdout and stderr, as for a long-lived process.
		std = []*os.File{s.StdinPipe, pw, pw}
	}
	h, limitErr, err := b.handOver(runCtx, s, cfgFile, std...)
	pw.Close()
	switch {
	case err != nil && runCtx.Err() != nil:
		return Outcome{Cancelled: ctx.Err() != nil, TimedOut: ctx.Err() == nil, Duration: time.Since(start),
			Missing: b.machineMissing()}, nil
	case err != nil:
		return Outcome{}, fmt.Errorf("box: hand the command to a helper: %w", err)
	}
	defer h.ctl.Close()
	if s.Started != nil {
		s.Started(h.cmd.Process.Pid)
	}
	// The next command's helper starts when this one is done.
	defer func() { go b.refill() }()
	if limitErr != nil {
		out.Missing = append(out.Missing, "cgroup limits: "+limitErr.Error())
	}
	var oom *oomWatch
	if h.cg != nil {
		defer h.cg.destroy()
		out.Applied = append(out.Applied, h.cg.applied(b.caps.cgroup, s)...)
		// On cgroup v1 the kernel kills one process when the command's
		// memory runs out: stop the rest too, as v2's memory.oom.group does.
		oom = h.cg.watchOOM(func() { h.stop(2 * time.Second) })
		defer oom.end()
	} else if h.cgErr != nil {
		out.Missing = append(out.Missing, "cgroup: "+h.cgErr.Error())
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(s.Output, pr)
		close(copied)
	}()
	reports := make(chan helperReport, 1)
	ctlFD := int(h.ctl.Fd())
	// The watch starts as its listener arrives, before the command runs:
	// until it is served, a watched call waits.
	var wt *watch
	serve := func(fd int) { wt = serveWrites(runCtx, fd, s.Writes, cfg.Writable, tmp) }
	var lb *Loopback
	if cfg.Connector {
		lb = newLoopback(h.openProc())
		// Unreachable from here on: the box's processes are gone.
		defer lb.end()
	}
	go func() {
		rep := readReports(ctlFD, receivers{proxy: px, writes: serve, relay: rl, loopback: lb})
		if lb != nil {
			lb.settle()
		}
		reports <- rep
	}()
	if lb != nil {
		s.Serves(lb)
	}

	select {
	case <-h.exited:
	case <-runCtx.Done():
		// A namespaced helper became the command and is PID 1 of its
		// namespace: killing it makes the kernel kill every process in
		// the box. The supervisor kills the tree it reaped on SIGTERM.
		h.stop(2 * time.Second)
	}
	waitErr := h.err
	if h.cg != nil {
		// Everything left in the command's cgroup dies at once.
		h.cg.kill()
		out.MemoryLimitHit = h.cg.oomKilled() || oom.fired.Load()
		out.MemoryLimit = s.MemoryBytes
	}
	if !namespaced {
		// Belt and braces, should the supervisor have died before its
		// work was done: kill every process group of the helper's session.
		killSession(h.cmd.Process.Pid)
	}
	// Output still held by a process that escaped is cut after a grace.
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		pr.Close()
		<-copied
	}
	// The helper's end closes when it execs or exits; then the reader
	// returns.
	rep := <-reports
	if wt != nil {
		// Every process of the box is gone: no call is left to be told.
		wt.stop()
	}
	if s.Writes != nil {
		out.Unwatched = unwatched(b, m, rep, wt != nil)
	}
	out.Duration = time.Since(start)
	out.Applied = append(out.Applied, rep.Applied...)
	out.Missing = append(append(b.machineMissing(), out.Missing...), rep.Missing...)
	if namespaced {
		out.Applied = append([]string{"namespaces (" + nsNames(m) + ")"}, out.Applied...)
	}
	if px != nil {
		out.Denied = px.Denied()
	}
	if rep.Error != "" {
		return out, fmt.Errorf("box: %s", rep.Error)
	}
	switch {
	case ctx.Err() != nil:
		out.Cancelled = true
	case runCtx.Err() != nil:
		out.TimedOut = true
	}
	if err := exitOf(&out, waitErr, namespaced); err != nil {
		return out, err
	}
	return out, nil
}

// helperConfig is what the helper is told of the command s, whose
// private temp dir is tmp.
func (b *Box) helperConfig(s Spec, tmp string) helperConfig {
	m := b.caps
	namespaced := m.cloneflags != 0
	writable := append([]string(nil), s.Writable...)
	if s.Private != "" {
		writable = append(writable, s.Private)
	}
	return helperConfig{
		Command:     s.Command,
		Args:        s.Args,
		Dir:         s.Dir,
		Env:         append(append([]string(nil), s.Env...), "TMPDIR="+tmp),
		Writable:    append(writable, tmp),
		Private:     s.Private,
		TmpDir:      tmp,
		TmpBytes:    s.TmpBytes,
		ShmBytes:    s.ShmBytes,
		Hidden:      s.Hidden,
		Stdin:       s.Stdin,
		AllowUserNS: s.AllowUserNamespaces,
		MemoryBytes: s.MemoryBytes,
		Processes:   s.Processes,
		Namespaced:  namespaced,
		UserNS:      m.userns,
		Landlock:    m.landlock > 0 && !b.opts.NoLandlock,
		Seccomp:     m.seccomp && !b.opts.NoSeccomp,
		// Landlock from ABI 9 on confines pathname Unix sockets itself.
		DenyUnix: !s.AllowUnixSockets && m.landlock < 9,
		// Without a network namespace: TCP only to the proxy (Landlock),
		// and no UDP or raw sockets (seccomp).
		LandlockNet: !namespaced,
		DenyInet:    !namespaced,
		WatchWrites: s.Writes != nil && m.writesErr == nil && !b.opts.NoSeccomp,
	}
}

// proxyFor starts the proxy of a command that may reach hosts (nil for
// one that may not) and tells cfg where it is: in the box's network
// namespace (its listener comes back from the helper) or on the host's
// loopback.
func (b *Box) proxyFor(s Spec, cfg *helperConfig) (*proxy, error) {
	if len(s.AllowHosts) == 0 {
		return nil, nil
	}
	px := newProxy(s.AllowHosts)
	if cfg.Namespaced {
		cfg.ProxyInside = true
		return px, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		px.close()
		return nil, fmt.Errorf("box: proxy: %w", err)
	}
	px.serve(ln)
	cfg.ProxyPort = ln.Addr().(*net.TCPAddr).Port
	return px, nil
}

// exitOf fills out's exit code and signal from the helper's Wait error.
func exitOf(out *Outcome, waitErr error, namespaced bool) error {
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		ws, _ := ee.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			out.Signal = unix.SignalName(ws.Signal())
			out.ExitCode = 128 + int(ws.Signal())
		case !namespaced && ws.ExitStatus() > 128 && ws.ExitStatus() < 128+65:
			// The supervisor reports a signal death as 128+n.
			out.Signal = unix.SignalName(syscall.Signal(ws.ExitStatus() - 128))
			out.ExitCode = ws.ExitStatus()
		default:
			out.ExitCode = ws.ExitStatus()
		}
	case waitErr != nil:
		return fmt.Errorf("box: %w", waitErr)
	}
	return nil
}

// unwatched says why a run whose writes were to be watched was not
// ("" when it was).
func unwatched(b *Box, m machine, rep helperReport, served bool) string {
	switch {
	case served:
		return ""
	case b.opts.NoSeccomp:
		return "seccomp is switched off"
	case m.writesErr != nil:
		return m.writesErr.Error()
	case rep.Unwatched != "":
		return rep.Unwatched
	}
	return "the box did not hand over the seccomp filter's listener"
}

func nsNames(m machine) string {
	if m.userns {
		return "user, network, pid, ipc, mount"
	}
	return "network, pid, ipc, mount"
}

// machineMissing names the layers this machine lacks for every command,
// each with its consequence in a few words: every command's result
// carries them.
func (b *Box) machineMissing() []string {
	m := b.caps
	var out []string
	if m.cloneflags == 0 {
		out = append(out, "namespaces ("+m.nsErr+"): host network, limited by Landlock and seccomp; leftovers killed by a supervisor")
	}
	if m.landlock == 0 || b.opts.NoLandlock {
		out = append(out, "landlock: writes are not confined to the workspace")
	}
	if !m.seccomp || b.opts.NoSeccomp {
		out = append(out, "seccomp: Unix sockets and kernel keyrings are reachable")
	}
	if !m.cgroup.hasMemory() {
		out = append(out, "cgroup memory limit: memory is capped per process, not for the whole command")
	}
	return out
}

// killSession kills the process groups of every process in session sid
// until none is left. Only the box's processes are in it: the helper
// started the session.
func killSession(sid int) {
	for range 100 {
		groups := map[int]bool{}
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if s, err := unix.Getsid(pid); err == nil && s == sid {
				if g, err := unix.Getpgid(pid); err == nil {
					groups[g] = true
				}
			}
		}
		if len(groups) == 0 {
			return
		}
		for g := range groups {
			unix.Kill(-g, unix.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

// receivers are what the helper's descriptors go to: the proxy's
// listener, the seccomp filter's listener (writes), the relayed ports'
// listeners and the connector's and diag sockets (loopback).
type receivers struct {
	proxy    *proxy
	writes   func(fd int)
	relay    *relay
	loopback *Loopback
}

// readReports collects what the helper says until it closes the socket:
// its report and the descriptors it passes, each given to its receiver
// (or closed when it has none).
func readReports(ctl int, to receivers) helperReport {
	var rep helperReport
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		// Close-on-exec: a helper bridle starts meanwhile (the spare, a
		// command of another session) must not inherit them.
		n, oobn, _, _, err := unix.Recvmsg(ctl, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return rep
		}
		var r helperReport
		if json.Unmarshal(buf[:n], &r) == nil {
			rep.Applied = append(rep.Applied, r.Applied...)
			rep.Missing = append(rep.Missing, r.Missing...)
			if r.Error != "" {
				rep.Error = r.Error
			}
			if r.Unwatched != "" {
				rep.Unwatched = r.Unwatched
			}
			rep.Writes = rep.Writes || r.Writes
		}
		fd := -1
		if fds := rightsOf(oob[:oobn]); len(fds) > 0 {
			fd = fds[0]
			closeAll(fds[1:])
		}
		switch {
		case fd < 0:
		case r.Writes:
			if to.writes == nil {
				unix.Close(fd)
				break
			}
			to.writes(fd)
		case r.Connector:
			if to.loopback == nil {
				unix.Close(fd)
				break
			}
			if c, err := newConnector(fd); err == nil {
				to.loopback.conn = c
			}
		case r.Diag:
			if to.loopback == nil {
				unix.Close(fd)
				break
			}
			to.loopback.takeDiag(fd)
		case r.Relay > 0:
			if to.relay == nil {
				unix.Close(fd)
				break
			}
			to.relay.serve(fd)
		case to.proxy != nil:
			f := os.NewFile(uintptr(fd), "box-proxy")
			if ln, err := net.FileListener(f); err == nil {
				px := to.proxy
				px.serve(ln)
				if to.loopback != nil {
					to.loopback.proxyPort = ln.Addr().(*net.TCPAddr).Port
				}
			}
			f.Close()
		default:
			unix.Close(fd)
		}
	}
}
