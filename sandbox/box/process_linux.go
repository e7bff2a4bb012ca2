package box

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Start starts a long-lived process in the box (a language server): s.Args
// is run with the box's every layer, as Run runs a command, its standard
// input and output as the Process's pipes and its stderr copied to
// s.Output (nil: dropped). s.Timeout does not apply: the process lives
// until it exits or Close kills it, whole. ctx bounds the start only.
func (b *Box) Start(ctx context.Context, s Spec) (*Process, error) {
	b.once.Do(b.probeMachine)
	m := b.caps
	start := time.Now()
	switch {
	case len(s.Args) == 0 || s.Args[0] == "" || s.Args[0][0] != '/':
		return nil, errors.New("box: a process needs a program given by its absolute path")
	case s.Dir == "" || len(s.Writable) == 0 && s.Private == "":
		return nil, errors.New("box: a process needs a directory and a writable directory")
	}
	tmp, err := os.MkdirTemp("", "bridle-box-")
	if err != nil {
		return nil, fmt.Errorf("box: private temp dir: %w", err)
	}
	// What is released once the box is gone, or at once on a failed
	// start; each step adds its own.
	var release []func()
	cleanup := func() {
		for i := len(release) - 1; i >= 0; i-- {
			release[i]()
		}
	}
	release = append(release, func() { os.RemoveAll(tmp) })
	cfg := b.helperConfig(s, tmp)
	cfg.Command = ""
	px, err := b.proxyFor(s, &cfg)
	if err != nil {
		cleanup()
		return nil, err
	}
	if px != nil {
		release = append(release, px.close)
	}
	cfgFile, err := configFile(cfg)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("box: %w", err)
	}
	release = append(release, func() { cfgFile.Close() })
	pipes, err := stdPipes()
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("box: %w", err)
	}
	h, limitErr, err := b.handOver(ctx, s, cfgFile, pipes.child[:]...)
	for _, f := range pipes.child {
		f.Close()
	}
	if err != nil {
		pipes.closeParent()
		cleanup()
		return nil, fmt.Errorf("box: hand the process to a helper: %w", err)
	}
	go b.refill()
	release = append(release, func() { h.ctl.Close() })
	var out Outcome
	if limitErr != nil {
		out.Missing = append(out.Missing, "cgroup limits: "+limitErr.Error())
	}
	var oom *oomWatch
	if h.cg != nil {
		release = append(release, h.cg.destroy)
		out.Applied = append(out.Applied, h.cg.applied(m.cgroup, s)...)
		oom = h.cg.watchOOM(func() { h.stop(2 * time.Second) })
		release = append(release, oom.end)
	} else if h.cgErr != nil {
		out.Missing = append(out.Missing, "cgroup: "+h.cgErr.Error())
	}
	stderr := s.Output
	if stderr == nil {
		stderr = io.Discard
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(stderr, pipes.stderr)
		close(copied)
	}()
	reports := make(chan helperReport, 1)
	ctlFD := int(h.ctl.Fd())
	go func() { reports <- readReports(ctlFD, receivers{proxy: px}) }()
	// The helper's report comes when the program starts (its end of the
	// socket closes on exec) or could not be started.
	var rep helperReport
	select {
	case rep = <-reports:
	case <-ctx.Done():
		rep.Error = "cancelled while starting: " + ctx.Err().Error()
	}
	if rep.Error != "" {
		h.stop(time.Second)
		if h.cg != nil {
			h.cg.kill()
		}
		if !cfg.Namespaced {
			killSession(h.cmd.Process.Pid)
		}
		pipes.closeParent()
		<-copied
		cleanup()
		return nil, fmt.Errorf("box: %s", rep.Error)
	}

	out.Applied = append(out.Applied, rep.Applied...)
	out.Missing = append(out.Missing, rep.Missing...)
	p := &Process{Stdin: pipes.stdin, Stdout: pipes.stdout, done: make(chan struct{}),
		stop: func() { h.stop(2 * time.Second) }}
	go func() {
		<-h.exited
		if h.cg != nil {
			h.cg.kill()
			out.MemoryLimitHit = h.cg.oomKilled() || oom.fired.Load()
			out.MemoryLimit = s.MemoryBytes
		}
		if cfg.Namespaced {
			out.Applied = append([]string{"namespaces (" + nsNames(m) + ")"}, out.Applied...)
		} else {
			killSession(h.cmd.Process.Pid)
		}
		select {
		case <-copied:
		case <-time.After(2 * time.Second):
			pipes.stderr.Close()
			<-copied
		}
		pipes.stderr.Close()
		out.Duration = time.Since(start)
		out.Missing = append(b.machineMissing(), out.Missing...)
		if px != nil {
			out.Denied = px.Denied()
		}
		exitOf(&out, h.err, cfg.Namespaced)
		cleanup()
		p.outcome = out
		close(p.done)
	}()
	return p, nil
}

// std are the pipes of a long-lived process: the ends the box's process
// gets (child: stdin's read end, stdout's and stderr's write ends) and
// the ones bridle keeps.
type std struct {
	child                 [3]*os.File
	stdin, stdout, stderr *os.File
}

func stdPipes() (*std, error) {
	var p std
	var made []*os.File
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range made {
				f.Close()
			}
			return nil, fmt.Errorf("pipe: %w", err)
		}
		made = append(made, r, w)
		switch i {
		case 0:
			p.child[0], p.stdin = r, w
		case 1:
			p.stdout, p.child[1] = r, w
		case 2:
			p.stderr, p.child[2] = r, w
		}
	}
	return &p, nil
}

func (p *std) closeParent() {
	p.stdin.Close()
	p.stdout.Close()
	p.stderr.Close()
}

// KeepsServers says Start can keep long-lived processes in: always on
// Linux, with whatever layers the machine has (as commands).
func (b *Box) KeepsServers() error { return nil }
