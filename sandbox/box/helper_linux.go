package box

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// helperArg marks a re-execution of bridle as the box's first process.
const helperArg = "__bridle_box__"

// Descriptors the helper inherits.
const (
	ctlFD    = 3 // SOCK_SEQPACKET to the parent: the command in, reports and listener fd out
	configFD = 4 // memfd with the helperConfig (a placeholder until the command comes)
)

// helperConfig is what the parent tells the helper.
type helperConfig struct {
	Command string `json:"command"`
	// Args, when set, is run as it is instead of /bin/sh -c Command.
	Args     []string `json:"args,omitempty"`
	Dir      string   `json:"dir"`
	Env      []string `json:"env"`
	Writable []string `json:"writable"`
	// TmpDir is the private temp dir (also in Writable), a tmpfs of
	// TmpBytes in the box; ShmBytes sizes /dev/shm.
	TmpDir   string `json:"tmp_dir,omitempty"`
	TmpBytes int64  `json:"tmp_bytes,omitempty"`
	ShmBytes int64  `json:"shm_bytes,omitempty"`
	// Hidden are paths the command must not see.
	Hidden []string `json:"hidden,omitempty"`
	// Private is a writable directory (also in Writable) that may lie
	// inside a hidden path and stays visible there.
	Private string `json:"private,omitempty"`
	// Stdin is put on the command's descriptor 0 as a memfd.
	Stdin []byte `json:"stdin,omitempty"`

	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	Processes   int   `json:"processes,omitempty"`

	// Namespaced: the helper is PID 1 of new namespaces.
	Namespaced bool `json:"namespaced,omitempty"`
	UserNS     bool `json:"userns,omitempty"`
	// ProxyInside asks for a listener in the network namespace, passed
	// back to the parent, which serves the proxy on it.
	ProxyInside bool `json:"proxy_inside,omitempty"`
	// ProxyPort is the parent's proxy port when there is no network
	// namespace.
	ProxyPort int `json:"proxy_port,omitempty"`
	// Relay are the ports other boxes listen on that the command reaches
	// on its own loopback: the helper listens there, in the namespace,
	// and passes each listener back to the parent (relay_linux.go).
	Relay []listenPort `json:"relay,omitempty"`
	// Connector asks for the box's connector (connector_linux.go),
	// through which later commands reach its loopback.
	Connector bool `json:"connector,omitempty"`

	// WatchWrites asks for the seccomp filter's listener (writes_linux.go),
	// sent to the parent before the command starts.
	WatchWrites bool `json:"watch_writes,omitempty"`

	Landlock    bool `json:"landlock,omitempty"`
	LandlockNet bool `json:"landlock_net,omitempty"`
	Seccomp     bool `json:"seccomp,omitempty"`
	DenyUnix    bool `json:"deny_unix,omitempty"`
	DenyInet    bool `json:"deny_inet,omitempty"`
	AllowUserNS bool `json:"allow_userns,omitempty"`
}

// helperReport is what the helper tells the parent before it runs the
// command (or instead, on failure).
type helperReport struct {
	Applied   []string `json:"applied,omitempty"`
	Missing   []string `json:"missing,omitempty"`
	Error     string   `json:"error,omitempty"`
	ProxyPort int      `json:"proxy_port,omitempty"`
	// Writes marks the message that carries the seccomp filter's
	// listener; Unwatched says why there is none when one was asked for.
	Writes    bool   `json:"writes,omitempty"`
	Unwatched string `json:"unwatched,omitempty"`
	// Relay marks a message carrying a listener of Relay's (its port);
	// Connector one carrying the parent's end of the connector's socket.
	Relay     int  `json:"relay,omitempty"`
	Connector bool `json:"connector,omitempty"`
	// Diag marks the message carrying a NETLINK_SOCK_DIAG socket of the
	// box's network namespace, through which bridle lists the ports it
	// listens on (diag_linux.go).
	Diag bool `json:"diag,omitempty"`
}

// MaybeRunHelper runs the box's helper and exits when this process was
// started as one; otherwise it returns at once. main must call it first.
func MaybeRunHelper() {
	if len(os.Args) < 2 || os.Args[1] != helperArg {
		return
	}
	// Credentials, rlimits and the final execve act on this thread.
	runtime.LockOSThread()
	stage := "exec"
	if len(os.Args) > 2 {
		stage = os.Args[2]
	}
	switch stage {
	case "probe":
		send(helperReport{Applied: []string{"probe"}}, -1)
		if len(os.Args) > 4 && os.Args[3] == "writes" {
			probeWrites(os.Args[4])
		}
		os.Exit(0)
	case "supervise":
		// Its exec stage, started at once, waits for the command itself.
		os.Exit(supervise())
	case "connector":
		var limit int64
		if len(os.Args) > 3 {
			limit, _ = strconv.ParseInt(os.Args[3], 10, 64)
		}
		os.Exit(runConnector(limit))
	}
	receiveCommand()
	cfg, err := readConfig()
	if err != nil {
		fail(helperReport{}, "read the box configuration: %v", err)
	}
	execCommand(cfg)
}

// receiveCommand waits for the parent to hand over a command: its
// standard descriptors (the output pipe, put on descriptors 1 and 2; or
// stdin, stdout and stderr, for a long-lived process) and the
// configuration, put on configFD. A closed socket means the spare is not
// needed: exit.
func receiveCommand() {
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := unix.Recvmsg(ctlFD, buf, oob, 0)
	if err != nil || n == 0 {
		os.Exit(0)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		fail(helperReport{}, "the command came without its descriptors")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	var moves []struct{ from, to int }
	switch {
	case err != nil:
	case len(fds) == 2:
		moves = []struct{ from, to int }{{fds[0], 1}, {fds[0], 2}, {fds[1], configFD}}
	case len(fds) == 4:
		moves = []struct{ from, to int }{{fds[0], 0}, {fds[1], 1}, {fds[2], 2}, {fds[3], configFD}}
	}
	if moves == nil {
		fail(helperReport{}, "the command came without its descriptors")
	}
	for _, d := range moves {
		if err := unix.Dup3(d.from, d.to, 0); err != nil {
			fail(helperReport{}, "set up descriptor %d: %v", d.to, err)
		}
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
}

func readConfig() (helperConfig, error) {
	var cfg helperConfig
	f := os.NewFile(configFD, "config")
	data := make([]byte, 0, 4096)
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		data = append(data, buf[:n]...)
		off += int64(n)
		if err != nil {
			break
		}
	}
	return cfg, json.Unmarshal(data, &cfg)
}

// send writes a report to the parent, with fd attached when fd >= 0.
func send(r helperReport, fd int) {
	b, _ := json.Marshal(r)
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	unix.Sendmsg(ctlFD, b, oob, nil, 0)
}

func fail(r helperReport, format string, args ...any) {
	r.Error = fmt.Sprintf(format, args...)
	send(r, -1)
	os.Exit(125)
}

// execCommand confines this process and replaces it with the command.
func execCommand(cfg helperConfig) {
	var rep helperReport
	applied := func(s string) { rep.Applied = append(rep.Applied, s) }
	missing := func(s string) { rep.Missing = append(rep.Missing, s) }
	env := append([]string(nil), cfg.Env...)
	listenFD := -1
	ownShm := false
	var conn *connectorStart

	if cfg.Namespaced {
		// Local servers (a test suite's) need the box's own loopback.
		if err := loopbackUp(); err != nil {
			fail(rep, "bring up the box's loopback interface: %v", err)
		}
		if cfg.ProxyInside {
			fd, port, err := listenLoopback(0, false)
			if err != nil {
				fail(rep, "open the proxy port in the box: %v", err)
			}
			listenFD, rep.ProxyPort = fd, port
			env = append(env, proxyEnv(port)...)
		}
		// After the proxy's: a port it took is not relayed.
		listenRelay(cfg.Relay)
		if cfg.Connector {
			// Its socket and descriptors are made before seccomp, which
			// would watch the open of /dev/null.
			conn = prepareConnector(cfg.MemoryBytes)
			// Made here, with the helper's capabilities and before
			// seccomp, and never the command's.
			sendDiag()
		}
		var err error
		if ownShm, err = setupMounts(cfg, applied, missing); err != nil {
			fail(rep, "%v", err)
		}
		if cfg.Processes > 0 {
			// A PID namespace's own pid_max (Linux 6.14+) caps its
			// processes for any user, root included. Only inside a user
			// namespace: on older kernels the write would otherwise reach
			// the machine-wide setting.
			if !cfg.UserNS {
				missing("pid_max: no user namespace, so the machine-wide value is left alone")
			} else if err := os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(max(cfg.Processes+1, 301))), 0); err != nil {
				missing(fmt.Sprintf("process cap by pid_max (needs Linux 6.14+): %v", errors.Unwrap(err)))
			} else {
				applied(fmt.Sprintf("process cap %d (pid_max)", max(cfg.Processes, 300)))
			}
		}
	} else {
		missing("private /dev/shm: no mount namespace, so /dev/shm is read-only (no POSIX shared memory or semaphores)")
		missing("read-only root: no mount namespace; commands can change permissions, owners, times and extended attributes of files outside the workspace")
		missing("own /proc: no mount namespace; the host's processes are visible to commands")
		missing("private $TMPDIR size limit: no mount namespace; the temp dir is on the host's disk")
		if len(cfg.Hidden) > 0 {
			if err := hiddenUnenforced(cfg); err != nil {
				fail(rep, "%v", err)
			}
			missing("hidden paths: no mount namespace; commands can read bridle's database and the credential stores (~/.ssh, ~/.aws, ...)")
		}
		if cfg.ProxyPort > 0 {
			env = append(env, proxyEnv(cfg.ProxyPort)...)
		}
	}

	if cfg.Processes > 0 {
		limit := uint64(cfg.Processes)
		if !cfg.UserNS {
			// Without a user namespace RLIMIT_NPROC counts all of the
			// user's processes: leave room for those already running.
			limit += uint64(userTasks(os.Getuid()))
		}
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
			missing("RLIMIT_NPROC: " + err.Error())
		} else if os.Getuid() != 0 {
			applied(fmt.Sprintf("process cap %d (RLIMIT_NPROC)", cfg.Processes))
		} else if !cfg.Namespaced {
			missing("process cap: RLIMIT_NPROC does not bind root, and without a PID namespace there is no pid_max of its own")
		}
	}
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})

	if err := unix.Chdir(cfg.Dir); err != nil {
		fail(rep, "enter %s: %v", cfg.Dir, err)
	}
	if cfg.Stdin != nil {
		if err := stdinFrom(cfg.Stdin); err != nil {
			fail(rep, "the command's input: %v", err)
		}
	}
	if err := dropCapabilities(); err != nil {
		fail(rep, "drop capabilities: %v", err)
	}
	if cfg.Landlock {
		if abi, err := restrictLandlock(cfg, ownShm); err != nil {
			missing("landlock: " + err.Error())
		} else {
			applied(fmt.Sprintf("landlock ABI %d", abi))
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(rep, "no_new_privs: %v", err)
	}

	// Everything the exec needs is allocated before the memory cap is
	// set: from there on the Go runtime must not grow its heap.
	prog, args := "/bin/sh", []string{"sh", "-c", cfg.Command}
	if len(cfg.Args) > 0 {
		prog, args = cfg.Args[0], cfg.Args
	}
	argv0, err := unix.BytePtrFromString(prog)
	if err != nil {
		fail(rep, "the program's path contains a NUL byte")
	}
	argv, err := cStrings(args)
	if err != nil {
		fail(rep, "the command contains a NUL byte")
	}
	envv, err := cStrings(env)
	if err != nil {
		fail(rep, "an environment variable contains a NUL byte")
	}
	if cfg.Seccomp {
		listener, watchErr, err := installSeccomp(seccompPolicy{DenyUnix: cfg.DenyUnix, DenyInet: cfg.DenyInet, DenyUserNS: !cfg.AllowUserNS,
			WatchWrites: cfg.WatchWrites})
		switch {
		case err != nil:
			missing("seccomp: " + err.Error())
			rep.Unwatched = "the seccomp filter could not be loaded: " + err.Error()
		default:
			applied("seccomp")
			if !cfg.AllowUserNS {
				applied("no new user namespaces")
			}
		}
		switch {
		case listener >= 0:
			send(helperReport{Writes: true}, listener)
			unix.Close(listener)
		case watchErr != nil:
			rep.Unwatched = watchErr.Error()
		}
	} else if cfg.WatchWrites {
		rep.Unwatched = "seccomp is off"
	}
	// Last, so that it runs under every layer the command gets.
	conn.start()
	send(rep, listenFD)
	if listenFD >= 0 {
		unix.Close(listenFD)
	}
	unix.CloseOnExec(ctlFD)
	unix.Close(configFD)
	if cfg.MemoryBytes > 0 {
		m := uint64(cfg.MemoryBytes)
		unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: m, Max: m})
	}
	_, _, errno := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	// Still here: the exec failed. Lift the cap so reporting can allocate.
	unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
	fail(helperReport{}, "start %s: %v", prog, errno)
}

// stdinFrom puts data on descriptor 0: an anonymous memory file, read
// from its start, which nothing else in the box can open by a path.
func stdinFrom(data []byte) error {
	fd, err := unix.MemfdCreate("stdin", 0)
	if err != nil {
		return fmt.Errorf("memfd: %w", err)
	}
	for rest := data; len(rest) > 0; {
		n, err := unix.Write(fd, rest)
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		rest = rest[n:]
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return fmt.Errorf("seek: %w", err)
	}
	if err := unix.Dup3(fd, 0, 0); err != nil {
		return fmt.Errorf("dup: %w", err)
	}
	return unix.Close(fd)
}

// probeWrites loads a filter that watches writes, hands its listener to
// the parent and makes a file in dir, which the parent must be told of.
func probeWrites(dir string) {
	listener, watchErr, err := installSeccomp(seccompPolicy{WatchWrites: true})
	switch {
	case err != nil:
		send(helperReport{Unwatched: "the seccomp filter could not be loaded: " + err.Error()}, -1)
		return
	case watchErr != nil:
		send(helperReport{Unwatched: watchErr.Error()}, -1)
		return
	}
	send(helperReport{Writes: true}, listener)
	unix.Close(listener)
	if fd, err := unix.Open(dir+"/probe", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600); err == nil {
		unix.Close(fd)
	}
}

// cStrings returns a NULL-terminated array of C strings for execve.
func cStrings(ss []string) ([]*byte, error) {
	out := make([]*byte, len(ss)+1)
	for i, s := range ss {
		p, err := unix.BytePtrFromString(s)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func proxyEnv(port int) []string {
	u := fmt.Sprintf("http://127.0.0.1:%d", port)
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1"}
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// listenLoopback listens on port (0: one the kernel picks) of
// 127.0.0.1, or of ::1 with v6, and returns the port.
func listenLoopback(port int, v6 bool) (fd, bound int, err error) {
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	if v6 {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}}
	}
	fd, err = unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, err
	}
	if v6 {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1)
	}
	if err == nil {
		err = unix.Bind(fd, sa)
	}
	if err == nil {
		err = unix.Listen(fd, 128)
	}
	if err == nil {
		sa, err = unix.Getsockname(fd)
	}
	if err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		bound = a.Port
	case *unix.SockaddrInet6:
		bound = a.Port
	}
	return fd, bound, nil
}

// listenRelay listens on the relayed ports and passes each listener to
// the parent. A port the box cannot have (the proxy took it; no IPv6)
// is left out: connecting there is refused, as it would be without the
// relay.
func listenRelay(ports []listenPort) {
	for _, p := range ports {
		for _, v6 := range []bool{false, true} {
			if !v6 && !p.V4 || v6 && !p.V6 {
				continue
			}
			if fd, _, err := listenLoopback(p.Port, v6); err == nil {
				send(helperReport{Relay: p.Port}, fd)
				unix.Close(fd)
			}
		}
	}
}

// connectorStart is what the connector is started with: its end of the
// socket pair, bridle's end, /dev/null for its standard descriptors, and
// the command's address-space cap.
type connectorStart struct {
	own, parent, null int
	limit             int64
}

func prepareConnector(limit int64) *connectorStart {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		closeAll(fds[:])
		return nil
	}
	return &connectorStart{own: fds[1], parent: fds[0], null: null, limit: limit}
}

// start starts the connector from this thread, so that it has the
// command's every layer (Landlock and seccomp are this thread's), waits
// until it has locked itself (connectorHarden), and passes bridle its
// end of the socket. Waiting keeps the command, which does not run yet,
// from catching the connector before that. The connector becomes a
// child of the command; it dies with the box's PID namespace. Without
// it, later commands only cannot reach this box's loopback.
func (c *connectorStart) start() {
	if c == nil {
		return
	}
	defer closeAll([]int{c.parent, c.null})
	// The configuration stays with the helper.
	unix.CloseOnExec(configFD)
	// /proc/self/exe is bridle's binary even where a hidden path now
	// covers its name.
	_, err := syscall.ForkExec("/proc/self/exe", []string{"/proc/self/exe", helperArg, "connector", strconv.FormatInt(c.limit, 10)},
		&syscall.ProcAttr{
			Env:   []string{},
			Files: []uintptr{uintptr(c.null), uintptr(c.null), uintptr(c.null), uintptr(c.own)},
		})
	unix.Close(c.own)
	if err != nil {
		return
	}
	// Its first message says it is locked; none (it ended) leaves the
	// box without a connector.
	buf := make([]byte, len(connectorReady))
	for {
		n, _, _, _, err := unix.Recvmsg(c.parent, buf, nil, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || string(buf[:n]) != connectorReady {
			return
		}
		break
	}
	send(helperReport{Connector: true}, c.parent)
}

// dropCapabilities leaves the command no capability, even as root: root
// gets none back at exec (SECBIT_NOROOT), the bounding set is emptied so
// file capabilities give none, and the ambient set is cleared.
func dropCapabilities() error {
	const secbits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	hasSetpcap := data[0].Effective&(1<<unix.CAP_SETPCAP) != 0
	if hasSetpcap {
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
			return fmt.Errorf("securebits: %w", err)
		}
		last := 63
		if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				last = n
			}
		}
		for c := 0; c <= last; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
				return fmt.Errorf("bounding set: %w", err)
			}
		}
	}
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	data = [2]unix.CapUserData{}
	return unix.Capset(&hdr, &data[0])
}

// restrictLandlock lets the command read and execute everywhere but write
// only in its writable directories, a few device files and, when the box
// has its own (ownShm), /dev/shm.
func restrictLandlock(cfg helperConfig, ownShm bool) (int, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, fmt.Errorf("not available (%v)", err)
	}
	configs := []landlock.Config{landlock.V1, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
		landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	c := configs[min(abi, len(configs)-1)]
	c.HandledAccessNet = 0
	if cfg.LandlockNet && abi >= 4 {
		c.HandledAccessNet = ll.AccessNetConnectTCP
	}
	rw := landlock.RWDirs(cfg.Writable...)
	if abi >= 2 {
		// Moving files between directories of the workspace (git does).
		rw = rw.WithRefer()
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		rw,
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty").IgnoreIfMissing(),
	}
	if ownShm {
		// POSIX semaphores and shared memory (Python's multiprocessing),
		// on the box's own tmpfs: the desktop's /dev/shm stays read-only.
		rules = append(rules, landlock.RWDirs("/dev/shm"))
	}
	if cfg.LandlockNet && abi >= 4 && cfg.ProxyPort > 0 {
		rules = append(rules, landlock.ConnectTCP(uint16(cfg.ProxyPort)))
	}
	// Enforce on this thread only: it is locked and execs the command
	// next. (Config.Restrict would reach every thread through libpsx,
	// which reads /proc/<pid>/task and cannot find itself from inside a
	// PID namespace.)
	fd, flags, err := c.NewRulesetFD(rules...)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, err
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return 0, err
	}
	return abi, nil
}

// userTasks counts the threads the user runs now.
func userTasks(uid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) == nil && int(st.Uid) == uid {
			tasks, _ := os.ReadDir("/proc/" + e.Name() + "/task")
			n += max(len(tasks), 1)
		}
	}
	return n
}

// supervise runs the exec stage as a child and, being a subreaper, kills
// every process it leaves behind, daemons included: the fallback for
// machines without PID namespaces. The exec stage starts at once, in a
// spare too, and takes the command from the control socket itself.
func supervise() int {
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command("/proc/self/exe", helperArg, "exec")
	cmd.Env = []string{}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// The command gets its own process group, so that one kill reaches
	// all of it that did not leave the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ctl, cfg := os.NewFile(ctlFD, "control"), os.NewFile(configFD, "config")
	cmd.ExtraFiles = []*os.File{ctl, cfg}
	if err := cmd.Start(); err != nil {
		fail(helperReport{}, "start the box: %v", err)
	}
	// Only the exec stage talks to the parent now; the parent sees the
	// end of the conversation when that stage execs.
	ctl.Close()
	cfg.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pgid := cmd.Process.Pid
	var err error
	select {
	case err = <-done:
	case <-sigs:
		killGroup(pgid)
		killDescendants()
		err = <-done
	}
	killGroup(pgid)
	killDescendants()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 125
	}
	return 0
}

// killGroup kills a process group until it is empty. A process being
// killed cannot fork, so a few passes catch a fork bomb.
func killGroup(pgid int) {
	for range 100 {
		if unix.Kill(-pgid, unix.SIGKILL) != nil {
			return
		}
		for {
			var ws unix.WaitStatus
			if pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}

// killDescendants stops and kills every process below this one until none
// is left, reaping them (orphans are re-parented here).
func killDescendants() {
	self := os.Getpid()
	for range 200 {
		kids := descendants(self)
		if len(kids) == 0 {
			return
		}
		// Stop first so that nothing forks while the tree is killed.
		for _, p := range kids {
			unix.Kill(p, unix.SIGSTOP)
		}
		for _, p := range kids {
			unix.Kill(p, unix.SIGKILL)
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: parse after
		// the last ')'. Fields: state ppid ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
