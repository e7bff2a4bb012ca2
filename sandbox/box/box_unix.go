//go:build unix && !linux

package box

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Run runs the command in its own process group with a timeout; this
// system has none of the Linux layers, and the outcome says so.
func (b *Box) Run(ctx context.Context, s Spec) (Outcome, error) {
	start := time.Now()
	tmp, runCtx, done, err := prepare(ctx, s)
	if err != nil {
		return Outcome{}, err
	}
	defer done()
	cmd := exec.CommandContext(runCtx, "/bin/sh", "-c", s.Command)
	cmd.Dir = s.Dir
	cmd.Env = append(append([]string(nil), s.Env...), "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = s.Output, s.Output
	cmd.Stdin = stdinOf(s)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	out := Outcome{Duration: time.Since(start), Missing: b.layers(Outcome{}, nil).MissingLayers()}
	if s.Writes != nil {
		out.Unwatched = b.WatchesWrites().Error()
	}
	return ended(ctx, runCtx, out, err)
}

func (b *Box) layers(out Outcome, runErr error) Report {
	const none = "this system is not Linux"
	ls := []Layer{
		{Name: "network namespace", Detail: none, Without: "commands share the host network"},
		{Name: "pid namespace", Detail: none, Without: "the process group is killed; a process that leaves it survives"},
		{Name: "process cap", Detail: none, Without: "a fork bomb is stopped only by the timeout"},
		{Name: "landlock", Detail: none, Without: "commands can write anywhere this user can"},
		{Name: "seccomp", Detail: none, Without: "commands can reach every Unix socket of the desktop"},
		{Name: "write watch", Detail: none, Without: "bridle scans the workspace before and after each command to checkpoint what it changes: a copy of every file on a session's first command, and none past 20,000 files or 10,000 directories"},
	}
	if runErr != nil {
		ls = append([]Layer{{Name: "box", Detail: runErr.Error(), Without: "commands cannot run"}}, ls...)
	}
	return Report{Layers: ls}
}

// probeCommand is the command Report runs.
const probeCommand = "true"

// bootStamp is "": the boot's id is read from /proc where there is one.
func bootStamp() string { return "" }
