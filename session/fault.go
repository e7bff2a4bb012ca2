package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// Fault makes the process kill itself (SIGKILL, no cleanup) at a chosen
// point, so tests can prove that a crash anywhere loses nothing and
// repeats nothing. It is off unless BRIDLE_FAULT is set; see ParseFault.
type Fault struct {
	// AfterEvent kills the process right after the N-th event it commits.
	AfterEvent int64
	// InTool kills the process inside the N-th tool call it runs: after the
	// tool's side effect, before its result is committed.
	InTool int64
	// NoSpace makes the commit that carries the N-th event fail as on a
	// full disk (store.FailAppendAt), once: the process lives on, and the
	// commits after it work, as if space had been freed.
	NoSpace int64
	// AfterHook kills the process right after the N-th hook it runs is
	// recorded (hook_ran), before anything else happens.
	AfterHook int64

	events, tools, hooks atomic.Int64
}

// ParseFault reads BRIDLE_FAULT: "event:N", "tool:N", "hook:N" or "nospace:N" (N
// from 1).
func ParseFault(s string) (*Fault, error) {
	if s == "" {
		return nil, nil
	}
	kind, n, ok := strings.Cut(s, ":")
	v, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || v < 1 {
		return nil, fmt.Errorf("BRIDLE_FAULT=%q: want event:N, tool:N, hook:N or nospace:N with N ≥ 1", s)
	}
	switch kind {
	case "event":
		return &Fault{AfterEvent: v}, nil
	case "tool":
		return &Fault{InTool: v}, nil
	case "nospace":
		return &Fault{NoSpace: v}, nil
	case "hook":
		return &Fault{AfterHook: v}, nil
	}
	return nil, fmt.Errorf("BRIDLE_FAULT=%q: want event:N, tool:N, hook:N or nospace:N", s)
}

func (f *Fault) committed(n int) {
	if f == nil || f.AfterEvent == 0 {
		return
	}
	if f.events.Add(int64(n)) >= f.AfterEvent {
		die()
	}
}

func (f *Fault) toolRan() {
	if f == nil || f.InTool == 0 {
		return
	}
	if f.tools.Add(1) == f.InTool {
		die()
	}
}

func (f *Fault) hookRan() {
	if f == nil || f.AfterHook == 0 {
		return
	}
	if f.hooks.Add(1) == f.AfterHook {
		die()
	}
}

// die kills this process at once, as a crash would (SIGKILL on Unix,
// TerminateProcess on Windows).
func die() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
	select {} // the kill is on its way
}
