package box

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupBase is a cgroup v2 directory where this process may create child
// cgroups: its own cgroup, when writable. bridle never moves itself nor
// changes the controllers its parent enables: a box gets the memory and
// pids limits only where they are delegated already.
type cgroupBase struct {
	dir string
	// memory and pids say whether children get those controllers.
	memory, pids bool
}

// findCgroup returns this process's cgroup v2 directory if it can host
// boxes, or why not.
func findCgroup() (*cgroupBase, string) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, "no /proc/self/cgroup"
	}
	var path string
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return nil, "this process is in no cgroup v2 hierarchy"
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	mnt := ""
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 8 && strings.Contains(line, " - cgroup2 ") {
			mnt = f[4]
		}
	}
	if mnt == "" {
		return nil, "cgroup2 is not mounted"
	}
	dir := filepath.Join(mnt, path)
	probe := filepath.Join(dir, fmt.Sprintf("bridle-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return nil, fmt.Sprintf("cannot create a cgroup in %s (not delegated to this user): %v", dir, errors.Unwrap(err))
	}
	_, killErr := os.Stat(filepath.Join(probe, "cgroup.kill"))
	os.Remove(probe)
	if killErr != nil {
		return nil, "cgroup.kill is missing (Linux 5.14+)"
	}
	sub, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	on := " " + strings.TrimSpace(string(sub)) + " "
	return &cgroupBase{dir: dir, memory: strings.Contains(on, " memory "), pids: strings.Contains(on, " pids ")}, ""
}

// describe says what a box's cgroup gives on this machine.
func (c *cgroupBase) describe() string {
	var limits []string
	if c.memory {
		limits = append(limits, "memory.max")
	}
	if c.pids {
		limits = append(limits, "pids.max")
	}
	if len(limits) == 0 {
		return "each command in its own cgroup under " + c.dir + ", killed whole with cgroup.kill; the memory and pids controllers are not delegated there, so no cgroup limits"
	}
	return "each command in its own cgroup under " + c.dir + " with " + strings.Join(limits, " and ") + ", killed whole with cgroup.kill"
}

// boxCgroup is one command's cgroup.
type boxCgroup struct {
	dir string
	fd  *os.File
}

// newBoxCgroup creates a cgroup for one command; limit sets its limits
// once the command is known (a spare helper is born in it before).
func (c *cgroupBase) newBoxCgroup() (*boxCgroup, error) {
	dir, err := os.MkdirTemp(c.dir, "bridle-box-")
	if err != nil {
		return nil, err
	}
	fd, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &boxCgroup{dir: dir, fd: fd}, nil
}

// limit caps the whole command's memory and processes where those
// controllers are delegated.
func (b *boxCgroup) limit(c *cgroupBase, memory int64, processes int) error {
	if c.memory && memory > 0 {
		// The whole command's memory, not each process's address space.
		if err := os.WriteFile(filepath.Join(b.dir, "memory.max"), []byte(strconv.FormatInt(memory, 10)), 0); err != nil {
			return err
		}
		os.WriteFile(filepath.Join(b.dir, "memory.swap.max"), []byte("0"), 0)
	}
	if c.pids && processes > 0 {
		if err := os.WriteFile(filepath.Join(b.dir, "pids.max"), []byte(strconv.Itoa(processes)), 0); err != nil {
			return err
		}
	}
	return nil
}

// destroy kills every process in the cgroup and removes it.
func (b *boxCgroup) destroy() {
	b.fd.Close()
	for range 500 {
		os.WriteFile(filepath.Join(b.dir, "cgroup.kill"), []byte("1"), 0)
		if err := os.Remove(b.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}
