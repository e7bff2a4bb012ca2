package box

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A helper is bridle re-executed in the box's namespaces (or as the
// fallback's supervisor), waiting on its control socket for a command.
// Starting one (clone with new namespaces, exec, the Go runtime's start)
// takes most of a confined command's overhead, so the box keeps one spare,
// started while the previous command runs: a command then pays only for
// its own confinement.
type helper struct {
	cmd *exec.Cmd
	ctl *os.File
	// cg is the cgroup the helper was born in (nil without one); cgErr
	// says why there is none where the machine has cgroups.
	cg         *boxCgroup
	cgErr      error
	namespaced bool
	// exited is closed when the helper has exited; err is then Wait's.
	exited chan struct{}
	err    error
	// proc is /proc/PID of the helper, opened before it can be reaped
	// (a later open could find another process given its pid), closed
	// once it is; procMu guards it.
	procMu sync.Mutex
	proc   *os.File
}

// spareIdle is how long an unused spare helper is kept.
const spareIdle = 10 * time.Second

// startHelper starts a helper that waits for its command.
func (b *Box) startHelper() (*helper, error) {
	m := b.caps
	ctl, child, err := controlPair()
	if err != nil {
		return nil, err
	}
	// The configuration arrives later, dup'ed onto configFD: hold the
	// descriptor number until then, so the helper's runtime does not take it.
	placeholder, err := os.Open(os.DevNull)
	if err != nil {
		ctl.Close()
		child.Close()
		return nil, err
	}
	defer placeholder.Close()
	defer child.Close()
	h := &helper{ctl: ctl, namespaced: m.cloneflags != 0, exited: make(chan struct{})}
	stage := "exec"
	if !h.namespaced {
		stage = "supervise"
	}
	cmd := exec.Command("/proc/self/exe", helperArg, stage)
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{child, placeholder}
	cmd.SysProcAttr = sysProcAttr(m.cloneflags, m.userns)
	if m.cgroup != nil {
		if h.cg, h.cgErr = m.cgroup.newBoxCgroup(); h.cgErr == nil && h.cg.fd != nil {
			// Born in its cgroup (clone3 CLONE_INTO_CGROUP): nothing the
			// command starts is ever outside it.
			cmd.SysProcAttr.UseCgroupFD = true
			cmd.SysProcAttr.CgroupFD = int(h.cg.fd.Fd())
		}
	}
	h.cmd = cmd
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the helper ends:
		// this one stays until the helper has exited.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		if h.cg != nil {
			if err := h.cg.attach(cmd.Process.Pid); err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				started <- err
				return
			}
		}
		h.proc, _ = os.Open("/proc/" + strconv.Itoa(cmd.Process.Pid))
		started <- nil
		h.err = cmd.Wait()
		h.procMu.Lock()
		if h.proc != nil {
			h.proc.Close()
			h.proc = nil
		}
		h.procMu.Unlock()
		close(h.exited)
	}()
	if err := <-started; err != nil {
		ctl.Close()
		if h.cg != nil {
			h.cg.destroy()
		}
		return nil, err
	}
	return h, nil
}

// send hands the helper its command: the configuration and the
// command's standard descriptors, the write end of its output pipe
// (Run), or its stdin, stdout and stderr (Start).
func (h *helper) send(cfg *os.File, std []*os.File) error {
	fds := make([]int, 0, len(std)+1)
	for _, f := range std {
		fds = append(fds, int(f.Fd()))
	}
	return unix.Sendmsg(int(h.ctl.Fd()), []byte("run"), unix.UnixRights(append(fds, int(cfg.Fd()))...), nil, 0)
}

// openProc returns a descriptor of the helper's /proc/PID directory
// (nil once it has been reaped).
func (h *helper) openProc() *os.File {
	h.procMu.Lock()
	defer h.procMu.Unlock()
	if h.proc == nil {
		return nil
	}
	fd, err := unix.FcntlInt(h.proc.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), h.proc.Name())
}

func (h *helper) dead() bool {
	select {
	case <-h.exited:
		return true
	default:
		return false
	}
}

// stop ends the helper: a namespaced one is its box's PID 1, and its
// death kills the box; a supervisor gets SIGTERM, kills what it
// supervises and exits, or is killed after grace.
func (h *helper) stop(grace time.Duration) {
	if h.namespaced {
		h.cmd.Process.Kill()
	} else {
		h.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-h.exited:
	case <-time.After(grace):
		h.cmd.Process.Kill()
		<-h.exited
	}
}

// discard stops an unused helper and releases what it holds.
func (h *helper) discard() {
	h.ctl.Close() // a waiting helper exits when its socket closes
	h.stop(time.Second)
	if h.cg != nil {
		h.cg.destroy()
	}
}

// take returns a helper for one command: the spare if there is a live
// one, else a new one. The caller starts the next spare (refill) when
// its command is done: started alongside, it would take the CPU the
// command needs.
func (b *Box) take() (*helper, error) {
	b.spareMu.Lock()
	if b.spare == nil && b.refilling != nil {
		// One is on its way: sooner than starting another.
		wait := b.refilling
		b.spareMu.Unlock()
		<-wait
		b.spareMu.Lock()
	}
	h := b.spare
	b.spare = nil
	if b.spareTimer != nil {
		b.spareTimer.Stop()
	}
	b.spareMu.Unlock()
	if h != nil && h.dead() {
		h.discard()
		h = nil
	}
	if h == nil {
		var err error
		if h, err = b.startHelper(); err != nil {
			return nil, fmt.Errorf("start the helper: %w", err)
		}
	}
	return h, nil
}

// handOver gives the command (its config and its standard descriptors,
// see send) to a helper: the spare, or a fresh one if the spare died unused.
// The cgroup limits are written first, so the command never starts
// uncapped; limits the cgroup refuses come back as limitErr, to be
// reported (the per-process caps remain, as on a machine whose cgroups
// lack those controllers). A command whose ctx ended meanwhile is not
// handed over. On error no helper is left.
func (b *Box) handOver(ctx context.Context, s Spec, cfg *os.File, std ...*os.File) (h *helper, limitErr, err error) {
	give := func(h *helper) error {
		if h.cg != nil {
			limitErr = h.cg.limit(b.caps.cgroup, s.MemoryBytes, s.Processes)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return h.send(cfg, std)
	}
	if h, err = b.take(); err != nil {
		return nil, nil, err
	}
	if err = give(h); err != nil && ctx.Err() == nil {
		// The spare died unused (killed from outside): a fresh one.
		h.discard()
		if h, err = b.startHelper(); err != nil {
			return nil, nil, err
		}
		err = give(h)
	}
	if err != nil {
		h.discard()
		return nil, nil, err
	}
	return h, limitErr, nil
}

// refill starts a spare unless there is one, one is starting, or the box
// is closed.
func (b *Box) refill() {
	b.spareMu.Lock()
	if b.spare != nil || b.refilling != nil || b.closed {
		b.spareMu.Unlock()
		return
	}
	done := make(chan struct{})
	b.refilling = done
	b.spareMu.Unlock()
	h, err := b.startHelper()
	b.spareMu.Lock()
	b.refilling = nil
	defer close(done)
	if err != nil || b.closed || b.spare != nil {
		b.spareMu.Unlock()
		if h != nil {
			h.discard()
		}
		return
	}
	b.spare = h
	b.spareTimer = time.AfterFunc(spareIdle, func() { b.dropSpare(h) })
	b.spareMu.Unlock()
}

// dropSpare discards h if it is still the unused spare.
func (b *Box) dropSpare(h *helper) {
	b.spareMu.Lock()
	if b.spare != h {
		b.spareMu.Unlock()
		return
	}
	b.spare = nil
	b.spareMu.Unlock()
	h.discard()
}

// Close stops the spare helper. Commands still running are not affected;
// none is started after.
func (b *Box) Close() error {
	b.spareMu.Lock()
	b.closed = true
	h := b.spare
	b.spare = nil
	if b.spareTimer != nil {
		b.spareTimer.Stop()
	}
	b.spareMu.Unlock()
	if h != nil {
		h.discard()
	}
	return nil
}
