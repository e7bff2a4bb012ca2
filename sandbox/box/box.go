// Package box runs shell commands confined: own session and process group,
// no TTY, stdin from /dev/null (or Spec.Stdin), a timeout, memory and process caps, and on
// Linux a user, network, PID and IPC namespace, Landlock (writes only in
// the workspace and a private temp dir) and a seccomp filter. A command
// that is done, cancelled or timed out leaves no process behind.
//
// bridle re-executes itself as the first process of the box to set this
// up: main must call MaybeRunHelper before anything else.
package box

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Spec is one command to run.
type Spec struct {
	// Command is a shell command line, run with /bin/sh -c.
	Command string
	// Args, when set, is the program (an absolute path) and its
	// arguments, run as they are instead of Command: Start's servers.
	Args []string
	// Private is a writable directory of the process's own (a language
	// server's caches), added to Writable. It may lie inside a hidden
	// path (bridle's cache directory): it alone stays visible there.
	Private string
	// Dir is the working directory, absolute.
	Dir string
	// Writable are the directories the command may write: the workspace.
	// The box adds its private temp dir.
	Writable []string
	// Env is the command's whole environment (already scrubbed). The box
	// adds TMPDIR and, with a proxy, the proxy variables.
	Env []string
	// Output receives stdout and stderr, interleaved as written; for
	// Start, stderr alone (stdout is Process.Stdout).
	Output io.Writer
	// Stdin is what the command reads on its standard input (a hook's
	// event); nil: /dev/null. It is held in memory, never in a file the
	// command could find.
	Stdin []byte
	// Started, when set, is told the pid of the box's first process once
	// the command runs (Linux): killing it kills the whole box. A
	// background command's record, for a later bridle to kill a box a
	// dead one left.
	Started func(pid int)
	// StdinPipe, when set, is Run's command's standard input (the read
	// end of a pipe: a background command's, which command_input
	// writes); nil: /dev/null. Start has its own pipe.
	StdinPipe *os.File
	// Timeout ends the command; 0 means none.
	Timeout time.Duration
	// MemoryBytes caps each process's address space; 0 means none.
	MemoryBytes int64
	// Processes caps the processes (and threads) of the command; 0: none.
	Processes int
	// AllowHosts are the hosts the command may reach through the box's
	// HTTP proxy ("example.com", "*.example.com", "host:8080"). Empty:
	// no network at all.
	AllowHosts []string
	// AllowUnixSockets lets the command create Unix sockets. Off, it
	// cannot reach the desktop's daemons (D-Bus, Docker, agents) through
	// their sockets on kernels whose Landlock cannot confine them.
	AllowUnixSockets bool
	// AllowUserNamespaces lets the command create user namespaces.
	AllowUserNamespaces bool
	// Hidden are absolute paths the command must not see: it finds an
	// empty directory (or file) there. A hidden path inside a writable
	// directory stops the command on machines that cannot hide it.
	Hidden []string
	// TmpBytes and ShmBytes size the private $TMPDIR and /dev/shm (tmpfs);
	// 0: 512 MiB each.
	TmpBytes, ShmBytes int64
	// Writes, when set, is told of every file of Writable the command is
	// about to change, before it changes it (see Writes). Where the box
	// cannot watch (WatchesWrites), Outcome.Unwatched says why.
	Writes Writes
	// Serves, when set, is given the box's loopback as its command
	// starts (Run, Linux): a later command naming it in Reach reaches
	// what this one listens on. The box then holds one more process,
	// bridle's connector (connector_linux.go).
	Serves func(*Loopback)
	// Reach are loopbacks of boxes still running (a session's commands
	// in the background): the TCP ports they listen on at 127.0.0.1, ::1
	// or any address when this command starts (at most 64), this one
	// reaches on its own 127.0.0.1 and ::1, relayed by bridle (Run,
	// Linux). Elsewhere commands share the machine's loopback already.
	Reach []*Loopback
}

// Outcome is how a command ended.
type Outcome struct {
	ExitCode  int
	Signal    string // set when a signal killed it
	TimedOut  bool
	Cancelled bool
	Duration  time.Duration
	// Applied and Missing name the confinement layers this run had and
	// lacked (with what that means).
	Applied []string
	Missing []string
	// Denied lists the hosts the proxy refused.
	Denied []string
	// MemoryLimitHit says the command's processes together reached
	// MemoryLimit and the kernel stopped them.
	MemoryLimitHit bool
	MemoryLimit    int64
	// Unwatched says why Spec.Writes was not told what the command
	// changed ("" when it was, or when it was not set).
	Unwatched string
}

// Summary is a line for the model about how the command ended.
func (o Outcome) Summary(timeout time.Duration) string {
	var parts []string
	switch {
	case o.MemoryLimitHit:
		parts = append(parts, fmt.Sprintf("stopped: the command's processes together reached its memory limit of %d MiB and the kernel killed them (the limit is sandbox.command.memory_mb in your settings)", o.MemoryLimit>>20))
	case o.TimedOut:
		parts = append(parts, fmt.Sprintf("timed out after %s; the command and all its processes were killed", timeout.Round(time.Millisecond)))
	case o.Cancelled:
		parts = append(parts, "cancelled by the user; the command and all its processes were killed")
	case o.Signal != "":
		parts = append(parts, "killed by "+o.Signal)
	default:
		parts = append(parts, fmt.Sprintf("exit status %d", o.ExitCode))
	}
	if len(o.Denied) > 0 {
		parts = append(parts, "network access refused for "+strings.Join(o.Denied, ", ")+" (not in the session's allowed hosts)")
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// Process is a long-lived process in the box (Start): a language
// server, speaking on its standard input and output. Close kills it
// whole.
type Process struct {
	// Stdin and Stdout are the process's standard input and output, as
	// pipes (deadlines work on them).
	Stdin, Stdout *os.File

	done    chan struct{}
	outcome Outcome
	stop    func()
	once    sync.Once
}

// Done is closed when every process of the box has ended and what it
// held is released.
func (p *Process) Done() <-chan struct{} { return p.done }

// Outcome is how the process ended; it is set once Done is closed.
func (p *Process) Outcome() Outcome {
	<-p.done
	return p.outcome
}

// Close kills every process of the box, waits until they are gone and
// returns how the process ended. It may be called more than once.
func (p *Process) Close() Outcome {
	p.once.Do(func() {
		p.Stdin.Close()
		p.stop()
	})
	<-p.done
	p.Stdout.Close()
	return p.outcome
}

// Options switch layers off, for machines (and tests) where a layer must
// not be used.
type Options struct {
	NoNamespaces bool
	NoLandlock   bool
	NoSeccomp    bool
	NoCgroup     bool
}

// Box runs commands. It probes the machine once, on first use.
type Box struct {
	opts Options
	once sync.Once
	caps machine

	// The spare helper (Linux): started while a command runs, for the
	// next one.
	spareMu    sync.Mutex
	spare      *helper
	spareTimer *time.Timer
	refilling  chan struct{} // closed when the spare being started is in place
	closed     bool
}

// New returns a box.
func New(opts Options) *Box { return &Box{opts: opts} }

// machine is what the probe found.
type machine struct {
	cgroup    *cgroupBase
	cgroupErr string
	// cloneflags are the namespace flags a helper can be started with.
	cloneflags uintptr
	userns     bool
	landlock   int // ABI version, 0 without
	seccomp    bool
	nsErr      string
	// writesErr says why commands' writes cannot be watched (nil when
	// they can).
	writesErr error
}
