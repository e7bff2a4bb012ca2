//go:build !linux

package box

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// MaybeRunHelper returns at once: there is no helper outside Linux.
func MaybeRunHelper() {}

// There are no helpers or cgroups outside Linux.
type (
	helper     struct{}
	cgroupBase struct{}
)

// Loopback is a running box's loopback (Spec.Serves, Spec.Reach). Outside
// Linux a box has no network namespace: every command shares the
// machine's loopback, so there is nothing to relay and Serves is never
// called.
type Loopback struct{}

// WatchesWrites says that commands' writes cannot be watched here: that
// takes Linux's seccomp.
func (b *Box) WatchesWrites() error {
	return errors.New("watching what commands write needs Linux (seccomp)")
}

// Close does nothing: there is no spare helper outside Linux.
func (b *Box) Close() error { return nil }

// ErrNoBox is Start's answer outside Linux.
var ErrNoBox = errors.New("language servers run only in the Linux box (namespaces, Landlock, seccomp), which this system does not have; bridle does not start them here, because a server runs the repository's code (build scripts, plugins, the toolchain its settings name) the moment a file is opened")

// Start refuses: outside Linux nothing would keep a long-lived process
// in. A command is one the user can be asked about (full-auto asks before
// the first); a language server would start on an edit, unasked, and run
// the repository's code with the user's rights.
func (b *Box) Start(context.Context, Spec) (*Process, error) {
	return nil, ErrNoBox
}

// KeepsServers says why long-lived processes cannot be kept in here.
func (b *Box) KeepsServers() error { return ErrNoBox }

// stdinOf is what a command reads: a hook's event, a background
// command's pipe (which command_input writes), or nothing (nil: the
// null device).
func stdinOf(s Spec) io.Reader {
	switch {
	case s.Stdin != nil:
		return bytes.NewReader(s.Stdin)
	case s.StdinPipe != nil:
		return s.StdinPipe
	}
	return nil
}

// ended completes out with how the command ended: cancelled (ctx), timed
// out (runCtx, ctx with the command's timeout) or its exit code; err is
// Wait's.
func ended(ctx, runCtx context.Context, out Outcome, err error) (Outcome, error) {
	switch {
	case ctx.Err() != nil:
		out.Cancelled = true
	case runCtx.Err() != nil:
		out.TimedOut = true
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		out.ExitCode = ee.ExitCode()
	} else if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return out, fmt.Errorf("box: %w", err)
	}
	return out, nil
}

// prepare makes a command's private temp dir and the context that ends
// it at its timeout; done removes the one and releases the other.
func prepare(ctx context.Context, s Spec) (tmp string, runCtx context.Context, done func(), err error) {
	tmp, err = os.MkdirTemp("", "bridle-box-")
	if err != nil {
		return "", nil, nil, fmt.Errorf("box: private temp dir: %w", err)
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if s.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, s.Timeout)
	}
	return tmp, runCtx, func() {
		cancel()
		os.RemoveAll(tmp)
	}, nil
}
