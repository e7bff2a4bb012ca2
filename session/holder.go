package session

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

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
		return syscall.Kill(pid, 0) == nil
	}
	return startTime(pid) == parts[1]
}

// startTime is a process's start time in clock ticks since boot (field 22
// of /proc/PID/stat), or "" where /proc is unavailable.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields resume after ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
