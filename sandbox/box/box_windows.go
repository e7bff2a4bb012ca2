package box

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bridle-dev/bridle/sandbox/winjob"
	"golang.org/x/sys/windows"
)

// Run runs the command through cmd.exe in a Job Object (sandbox/winjob):
// its whole process tree is capped in processes and memory, and killed
// when the command ends, times out or is cancelled. This system has none
// of the Linux layers, and the outcome says so.
func (b *Box) Run(ctx context.Context, s Spec) (Outcome, error) {
	start := time.Now()
	tmp, runCtx, done, err := prepare(ctx, s)
	if err != nil {
		return Outcome{}, err
	}
	defer done()
	job, err := winjob.New(winjob.Limits{Processes: s.Processes, MemoryBytes: s.MemoryBytes})
	if err != nil {
		return Outcome{}, fmt.Errorf("box: %w", err)
	}
	defer job.Close()
	cmd := exec.CommandContext(runCtx, shell())
	// cmd.exe parses its own command line: /s /c "LINE" runs LINE as it
	// was written, without the argv quoting Go would add; /d skips the
	// AutoRun commands of the registry.
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: `cmd.exe /d /s /c "` + s.Command + `"`}
	winjob.Prepare(cmd)
	cmd.Dir = s.Dir
	cmd.Env = append(append([]string(nil), s.Env...), "TEMP="+tmp, "TMP="+tmp)
	cmd.Stdin = stdinOf(s)
	cmd.Stdout, cmd.Stderr = s.Output, s.Output
	cmd.Cancel = job.Kill
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return Outcome{}, fmt.Errorf("box: %w", err)
	}
	if err := job.Adopt(cmd); err != nil {
		cmd.Wait()
		return Outcome{}, fmt.Errorf("box: %w", err)
	}
	// Once the command's first process is done, what it left running
	// is killed: their output pipes close, and Wait returns at once.
	if stop, err := onExit(cmd.Process.Pid, func() { job.Kill() }); err == nil {
		defer stop()
	}
	err = cmd.Wait()
	job.Kill()
	out := Outcome{Duration: time.Since(start), Applied: jobApplied(s)}
	out.Missing = b.layers(out, nil).MissingLayers()
	if s.Writes != nil {
		out.Unwatched = b.WatchesWrites().Error()
	}
	if ctx.Err() == nil && runCtx.Err() == nil && job.MemoryHit() {
		out.MemoryLimitHit, out.MemoryLimit = true, s.MemoryBytes
	}
	return ended(ctx, runCtx, out, err)
}

// shell is the system's cmd.exe (the command line is cmd.exe's, whatever
// %ComSpec% names), or %ComSpec% where SystemRoot is not set.
func shell() string {
	if root := os.Getenv("SystemRoot"); root != "" {
		return filepath.Join(root, "System32", "cmd.exe")
	}
	return os.Getenv("ComSpec")
}

// onExit calls fn once the process pid has exited, unless stop is called
// first.
func onExit(pid int, fn func()) (stop func(), err error) {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return nil, err
	}
	ev, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		windows.CloseHandle(h)
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if w, err := windows.WaitForMultipleObjects([]windows.Handle{h, ev}, false, windows.INFINITE); err == nil && w == windows.WAIT_OBJECT_0 {
			fn()
		}
	}()
	return func() {
		windows.SetEvent(ev)
		<-done
		windows.CloseHandle(ev)
		windows.CloseHandle(h)
	}, nil
}

// probeCommand is the command Report runs: cmd.exe has no "true".
const probeCommand = "exit 0"

// Applied says what the job did for one run, for layers.
func jobApplied(s Spec) []string {
	out := []string{"job object: the command's whole process tree, killed when it ends, times out or is cancelled, or when bridle exits"}
	if s.Processes > 0 {
		out = append(out, fmt.Sprintf("process cap %d processes alive at once (job object)", s.Processes))
	}
	if s.MemoryBytes > 0 {
		out = append(out, fmt.Sprintf("memory cap %d MiB for the whole command (job object); past it the command is killed", s.MemoryBytes>>20))
	}
	return out
}

// layers reports what Windows gives a command: its Job Object kills the
// whole tree and caps its processes and memory; nothing keeps its
// reads, writes or network in, filters its system calls or watches what
// it writes. The names Unconfined reads (landlock, read-only root,
// network namespace) are absent, so full-auto asks before the first
// command.
func (b *Box) layers(out Outcome, runErr error) Report {
	const none = "Windows has nothing bridle uses for it"
	var ls []Layer
	if runErr != nil {
		ls = append(ls, Layer{Name: "box", Detail: runErr.Error(), Without: "commands cannot run"})
	}
	tree, ok := has(out.Applied, "job object")
	ls = append(ls, Layer{Name: "process tree", OK: ok, Detail: okOr(ok, tree, "no job object was made"),
		Without: "only the command's first process is killed; what it started survives"})
	pc, ok := has(out.Applied, "process cap")
	ls = append(ls, Layer{Name: "process cap", OK: ok, Detail: okOr(ok, pc, "no process cap was set"),
		Without: "a fork bomb is stopped only by the timeout"})
	mc, ok := has(out.Applied, "memory cap")
	ls = append(ls, Layer{Name: "memory cap", OK: ok, Detail: okOr(ok, mc, "no memory cap was set"),
		Without: "a command can use all the machine's memory"})
	ls = append(ls,
		Layer{Name: "filesystem confinement", Detail: none,
			Without: "commands can read and write anywhere this user can, bridle's own files and the credential stores (~/.ssh, ~/.aws, ...) included; the file tools still keep to the workspace and refuse hidden paths"},
		Layer{Name: "network confinement", Detail: none, Without: "commands share the host network"},
		Layer{Name: "syscall filter", Detail: none, Without: "commands can reach every named pipe, socket and service of the desktop"},
		Layer{Name: "write watch", Detail: none, Without: "bridle scans the workspace before and after each command to checkpoint what it changes: a copy of every file on a session's first command, and none past 20,000 files or 10,000 directories"},
	)
	return Report{Layers: ls}
}

func okOr(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// bootStamp names this boot for probeKey (Windows has no boot id to read):
// when it started, to the minute.
func bootStamp() string {
	return time.Now().Add(-windows.DurationSinceBoot()).Truncate(time.Minute).UTC().Format(time.RFC3339)
}
