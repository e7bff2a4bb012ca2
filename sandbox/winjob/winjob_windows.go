package winjob

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Limits cap a job's processes; 0 means no cap.
type Limits struct {
	// Processes caps how many processes of the job are alive at once: a
	// process that would be one more is not created.
	Processes int
	// MemoryBytes caps the memory the job's processes commit together.
	// A process's allocation past it fails, and the job is killed.
	MemoryBytes int64
}

// Job is a Job Object holding one command's process tree.
type Job struct {
	h    windows.Handle
	port windows.Handle

	once      sync.Once
	closed    chan struct{}
	memoryHit atomic.Bool
	mu        sync.Mutex
	released  bool          // Close has run: the handle is no longer bridle's
	flushed   chan struct{} // closed by watch when it reaches a flush mark
}

// What a job posts to its completion port when its processes reach its
// memory cap (JOB_OBJECT_MSG_JOB_MEMORY_LIMIT, winnt.h).
const msgJobMemoryLimit = 10

// flushKey marks a message bridle posts to the port itself (the job's
// messages carry the job's handle as their key).
const flushKey = 0

// jobAssociateCompletionPort is JOBOBJECT_ASSOCIATE_COMPLETION_PORT.
type jobAssociateCompletionPort struct {
	CompletionKey  uintptr
	CompletionPort windows.Handle
}

// New creates a job with the limits lim whose processes all die when it
// is closed. Its handle is not inherited, so only bridle holds it.
func New(lim Limits) (*Job, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create a job object: %w", err)
	}
	j := &Job{h: h, closed: make(chan struct{})}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	// No JOB_OBJECT_LIMIT_BREAKAWAY_OK: a process asking to be created
	// outside the job (CREATE_BREAKAWAY_FROM_JOB) is refused.
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if lim.Processes > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = uint32(lim.Processes)
	}
	if lim.MemoryBytes > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
		info.JobMemoryLimit = uintptr(lim.MemoryBytes)
	}
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("set the job object's limits: %w", err)
	}
	// The port tells when the memory cap was reached. A job whose port
	// cannot be had still kills and caps; it only cannot say why.
	if port, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 1); err == nil {
		assoc := jobAssociateCompletionPort{CompletionKey: uintptr(h), CompletionPort: port}
		if _, err := windows.SetInformationJobObject(h, windows.JobObjectAssociateCompletionPortInformation,
			uintptr(unsafe.Pointer(&assoc)), uint32(unsafe.Sizeof(assoc))); err == nil {
			j.port = port
			go j.watch()
		} else {
			windows.CloseHandle(port)
		}
	}
	return j, nil
}

// watch reads the job's messages until the job is closed: a process
// that reached the memory cap has the job killed, as the Linux kernel
// stops a cgroup over its memory.
func (j *Job) watch() {
	for {
		var msg uint32
		var key uintptr
		var ov *windows.Overlapped
		err := windows.GetQueuedCompletionStatus(j.port, &msg, &key, &ov, windows.INFINITE)
		select {
		case <-j.closed:
			return
		default:
		}
		if err != nil {
			if ov == nil {
				return // the port is gone
			}
			continue
		}
		switch {
		case key == flushKey:
			j.mu.Lock()
			if j.flushed != nil {
				close(j.flushed)
				j.flushed = nil
			}
			j.mu.Unlock()
		case key == uintptr(j.h) && msg == msgJobMemoryLimit:
			j.memoryHit.Store(true)
			j.Kill()
		}
	}
}

// Prepare makes cmd start suspended, so that Adopt can put its process
// in a job before it runs: a process that ran first could start others
// outside the job. It keeps what cmd.SysProcAttr already says.
func Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
}

// Adopt puts the process of cmd, started suspended (Prepare), in the job
// and lets it run. If it cannot, the process is killed before it has
// run, and the error says why.
func (j *Job) Adopt(cmd *exec.Cmd) error {
	pid := uint32(cmd.Process.Pid)
	err := j.assign(pid)
	if err == nil {
		err = resume(pid)
	}
	if err != nil {
		cmd.Process.Kill()
		return err
	}
	return nil
}

func (j *Job) assign(pid uint32) error {
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return fmt.Errorf("open the new process: %w", err)
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(j.h, p); err != nil {
		return fmt.Errorf("put the new process in its job object: %w", err)
	}
	return nil
}

// resume lets the suspended process pid run: its threads (a process
// created suspended has one) are found in a snapshot of the system's
// threads.
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("list the new process's threads: %w", err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		t, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("open the new process's thread: %w", err)
		}
		_, err = windows.ResumeThread(t)
		windows.CloseHandle(t)
		if err != nil {
			return fmt.Errorf("resume the new process's thread: %w", err)
		}
		resumed++
	}
	if resumed == 0 {
		return errors.New("the new process has no thread to resume")
	}
	return nil
}

// Kill ends every process in the job at once.
func (j *Job) Kill() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.released {
		return nil
	}
	if err := windows.TerminateJobObject(j.h, 1); err != nil {
		return fmt.Errorf("terminate the job object: %w", err)
	}
	return nil
}

// MemoryHit reports whether the job's processes reached the memory cap
// (and the job was killed for it). The system posts that message when an
// allocation fails, before the process can end: a mark posted after it
// and seen by watch means every message before it has been read.
func (j *Job) MemoryHit() bool {
	j.mu.Lock()
	ch := make(chan struct{})
	ok := j.port != 0 && !j.released && j.flushed == nil
	if ok {
		j.flushed = ch
	}
	j.mu.Unlock()
	if ok && windows.PostQueuedCompletionStatus(j.port, 0, flushKey, nil) == nil {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
		}
	}
	return j.memoryHit.Load()
}

// Close kills whatever is left in the job and releases it.
func (j *Job) Close() error {
	j.once.Do(func() {
		j.mu.Lock()
		j.released = true
		j.mu.Unlock()
		close(j.closed)
		windows.CloseHandle(j.h) // KILL_ON_JOB_CLOSE: the rest dies
		if j.port != 0 {
			windows.CloseHandle(j.port) // ends watch
		}
	})
	return nil
}
