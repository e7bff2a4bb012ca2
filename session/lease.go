package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/internal/pidalive"
	"github.com/bridle-dev/bridle/store"
)

// A session is served by one process at a time: the one that holds its
// lease in the store.

// lease makes this process the one serving a session.
func (m *Manager) lease(ctx context.Context, id string) error {
	err := m.cfg.Store.Acquire(ctx, id, m.holder, holderAlive)
	return busy(err)
}

// How long opening a session waits for another live process to let it
// go. An editor that restarts bridle (a window reloaded) starts the new
// process while the old one is still closing: a moment for one whose
// sessions are idle, and, once it has marked its leases as closing, until
// its turns have recorded how they ended (Shutdown's grace). A process
// that is not closing keeps its sessions: the wait is short, since the
// connection's other messages wait behind it.
const (
	leaseGrace       = 250 * time.Millisecond
	leaseClosingWait = shutdownGrace + time.Second
)

// leaseWaiting is lease that, while another live process holds the
// session, asks again for leaseGrace, or leaseClosingWait while that
// process is closing.
func (m *Manager) leaseWaiting(ctx context.Context, id string) error {
	start := time.Now()
	for try := 0; ; try++ {
		err := m.cfg.Store.Acquire(ctx, id, m.holder, holderAlive)
		var le *store.LeasedError
		if !errors.As(err, &le) {
			return busy(err)
		}
		wait := leaseGrace
		if le.Closing {
			wait = leaseClosingWait
		}
		if time.Since(start) >= wait {
			return busy(err)
		}
		if try == 0 {
			m.log.Debug("waiting for another bridle process to let the session go", "session", id, "holder", le.Holder, "closing", le.Closing)
		}
		t := time.NewTimer(25 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// busy words a lease another live process holds as ErrBusy.
func busy(err error) error {
	var le *store.LeasedError
	if errors.As(err, &le) {
		pid, _, _ := strings.Cut(le.Holder, "@")
		return fmt.Errorf("%w: session %s is open in another bridle process (pid %s); close it there first", ErrBusy, le.SessionID, pid)
	}
	return err
}

// release gives the session up for other processes.
func (m *Manager) release(id string) {
	if err := m.cfg.Store.Release(context.Background(), id, m.holder); err != nil {
		m.log.Warn("session lease not released", "session", id, "err", err)
	}
}

// A holder names this process across reboots and pid reuse:
// "pid@starttime@bootid". Leases in the store carry it, so a second
// bridle on the same database can tell a live owner from a crashed one.

// selfHolder returns this process's holder name.
func selfHolder() string {
	pid := os.Getpid()
	return fmt.Sprintf("%d@%s@%s", pid, startTime(pid), bootID())
}

// holderAlive reports whether the process a holder names still runs.
func holderAlive(h string) bool {
	parts := strings.SplitN(h, "@", 3)
	if len(parts) != 3 {
		return false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return false
	}
	if parts[2] != bootID() {
		return false // written before a reboot
	}
	if parts[1] == "" {
		// Written where /proc was unavailable: whether the pid exists at all.
		return pidalive.Exists(pid)
	}
	return startTime(pid) == parts[1]
}
