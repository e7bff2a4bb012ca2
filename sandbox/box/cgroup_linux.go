package box

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupBase is where this process may create a command's cgroups: its
// own cgroup v2 directory when writable (dir), and, on machines whose
// memory and pids controllers sit in cgroup v1 hierarchies, its own
// directories there when writable (v1Memory, v1Pids). bridle never moves
// itself nor changes the controllers its parent enables: in v2 a box gets
// the memory and pids limits only where they are delegated already.
type cgroupBase struct {
	dir string
	// memory and pids say whether v2 children get those controllers.
	memory, pids bool
	// v1Memory and v1Pids are cgroup v1 directories of this process with
	// the memory and pids controllers, where children can be created
	// ("" for none or when v2 has the controller).
	v1Memory, v1Pids string
	// v2Err says why there is no v2 directory.
	v2Err string
}

// hasMemory and hasPids say whether a command's cgroup can cap its
// memory and its processes as a whole.
func (c *cgroupBase) hasMemory() bool { return c != nil && (c.memory || c.v1Memory != "") }
func (c *cgroupBase) hasPids() bool   { return c != nil && (c.pids || c.v1Pids != "") }

// findCgroup returns where this process can create command cgroups, or
// why it cannot.
func findCgroup() (*cgroupBase, string) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, "no /proc/self/cgroup"
	}
	mounts := cgroupMounts()
	c := &cgroupBase{}
	c.dir, c.v2Err = findV2(string(data), mounts)
	if c.dir != "" {
		sub, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.subtree_control"))
		on := " " + strings.TrimSpace(string(sub)) + " "
		c.memory, c.pids = strings.Contains(on, " memory "), strings.Contains(on, " pids ")
	}
	if !c.memory {
		c.v1Memory = findV1(string(data), mounts, "memory")
	}
	if !c.pids {
		c.v1Pids = findV1(string(data), mounts, "pids")
	}
	if c.dir == "" && c.v1Memory == "" && c.v1Pids == "" {
		return nil, c.v2Err
	}
	return c, ""
}

// cgroupMount is one cgroup filesystem mounted here.
type cgroupMount struct {
	point, root string
	v2          bool
	controllers []string
}

func cgroupMounts() []cgroupMount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, p := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(p) < 3 || (p[0] != "cgroup" && p[0] != "cgroup2") {
			continue
		}
		out = append(out, cgroupMount{point: unescapeMount(f[4]), root: unescapeMount(f[3]), v2: p[0] == "cgroup2",
			controllers: strings.Split(p[2], ",")})
	}
	return out
}

// within maps a cgroup path to a directory under a mount of its hierarchy.
func (m cgroupMount) within(path string) string {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return ""
	}
	return filepath.Join(m.point, rel)
}

func findV2(self string, mounts []cgroupMount) (string, string) {
	var path string
	for _, line := range strings.Split(self, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return "", "this process is in no cgroup v2 hierarchy"
	}
	dir := ""
	for _, m := range mounts {
		if m.v2 {
			dir = m.within(path)
		}
	}
	if dir == "" {
		return "", "cgroup2 is not mounted"
	}
	probe := filepath.Join(dir, fmt.Sprintf("bridle-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return "", fmt.Sprintf("cannot create a cgroup in %s (not delegated to this user): %v", dir, errors.Unwrap(err))
	}
	_, killErr := os.Stat(filepath.Join(probe, "cgroup.kill"))
	os.Remove(probe)
	if killErr != nil {
		return "", "cgroup.kill is missing (Linux 5.14+)"
	}
	return dir, ""
}

// findV1 returns this process's directory in the cgroup v1 hierarchy of
// controller, if children can be created there.
func findV1(self string, mounts []cgroupMount, controller string) string {
	var path string
	for _, line := range strings.Split(self, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), controller) {
			path = parts[2]
		}
	}
	if path == "" {
		return ""
	}
	for _, m := range mounts {
		if m.v2 || !slices.Contains(m.controllers, controller) {
			continue
		}
		dir := m.within(path)
		if dir == "" {
			continue
		}
		probe := filepath.Join(dir, fmt.Sprintf("bridle-probe-%d", os.Getpid()))
		if os.Mkdir(probe, 0o755) != nil {
			return ""
		}
		os.Remove(probe)
		return dir
	}
	return ""
}

// describe says what a box's cgroup gives on this machine.
func (c *cgroupBase) describe() string {
	var parts []string
	if c.dir != "" {
		var limits []string
		if c.memory {
			limits = append(limits, "memory.max")
		}
		if c.pids {
			limits = append(limits, "pids.max")
		}
		s := "each command in its own cgroup v2 under " + c.dir + ", killed whole with cgroup.kill"
		if len(limits) > 0 {
			s += ", with " + strings.Join(limits, " and ")
		}
		parts = append(parts, s)
	}
	if c.v1Memory != "" {
		parts = append(parts, "cgroup v1 memory limit under "+c.v1Memory+" (the whole command is stopped when it is hit)")
	}
	if c.v1Pids != "" {
		parts = append(parts, "cgroup v1 pids limit under "+c.v1Pids)
	}
	if !c.hasMemory() {
		parts = append(parts, "the memory controller is not delegated here, so memory is capped per process only")
	}
	if !c.hasPids() {
		parts = append(parts, "the pids controller is not delegated here")
	}
	return strings.Join(parts, "; ")
}

// boxCgroup is one command's cgroups.
type boxCgroup struct {
	dir string   // v2, "" for none
	fd  *os.File // dir, for clone3's CLONE_INTO_CGROUP
	// v1Memory and v1Pids are the command's cgroup v1 directories.
	v1Memory, v1Pids string
}

// newBoxCgroup creates a command's cgroups; limit sets their limits once
// the command is known (a spare helper is born in them before).
func (c *cgroupBase) newBoxCgroup() (*boxCgroup, error) {
	b := &boxCgroup{}
	var err error
	if c.dir != "" {
		if b.dir, err = os.MkdirTemp(c.dir, "bridle-box-"); err != nil {
			return nil, err
		}
		if b.fd, err = os.Open(b.dir); err != nil {
			os.Remove(b.dir)
			return nil, err
		}
	}
	for _, v := range []struct {
		base string
		dir  *string
	}{{c.v1Memory, &b.v1Memory}, {c.v1Pids, &b.v1Pids}} {
		if v.base == "" {
			continue
		}
		if *v.dir, err = os.MkdirTemp(v.base, "bridle-box-"); err != nil {
			b.destroy()
			return nil, err
		}
	}
	return b, nil
}

// attach moves a helper that was just started into the command's cgroup
// v1 directories (v2 has it born in its cgroup). The helper does nothing
// until its command arrives, so nothing escapes the limits.
func (b *boxCgroup) attach(pid int) error {
	for _, d := range []string{b.v1Memory, b.v1Pids} {
		if d == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("move the box into %s: %w", d, err)
		}
	}
	return nil
}

// limit caps the whole command's memory and processes where those
// controllers are available. On v2 the kernel then kills the whole
// command when it runs out of memory (memory.oom.group); v1 has no such
// switch, and Run watches for the event instead.
func (b *boxCgroup) limit(c *cgroupBase, memory int64, processes int) error {
	mem := strconv.FormatInt(memory, 10)
	if memory > 0 && c.memory && b.dir != "" {
		if err := os.WriteFile(filepath.Join(b.dir, "memory.max"), []byte(mem), 0); err != nil {
			return err
		}
		os.WriteFile(filepath.Join(b.dir, "memory.swap.max"), []byte("0"), 0)
		os.WriteFile(filepath.Join(b.dir, "memory.oom.group"), []byte("1"), 0)
	}
	if memory > 0 && b.v1Memory != "" {
		if err := os.WriteFile(filepath.Join(b.v1Memory, "memory.limit_in_bytes"), []byte(mem), 0); err != nil {
			return err
		}
		// Memory and swap together, where swap is accounted.
		os.WriteFile(filepath.Join(b.v1Memory, "memory.memsw.limit_in_bytes"), []byte(mem), 0)
	}
	if processes > 0 {
		n := []byte(strconv.Itoa(processes))
		if c.pids && b.dir != "" {
			if err := os.WriteFile(filepath.Join(b.dir, "pids.max"), n, 0); err != nil {
				return err
			}
		}
		if b.v1Pids != "" {
			if err := os.WriteFile(filepath.Join(b.v1Pids, "pids.max"), n, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// applied names the command's cgroups and the limits they carry.
func (b *boxCgroup) applied(c *cgroupBase, s Spec) []string {
	var out []string
	if b.dir != "" {
		out = append(out, "cgroup "+filepath.Base(b.dir))
	}
	if s.MemoryBytes > 0 && c.hasMemory() {
		v := "v2"
		if b.v1Memory != "" {
			v = "v1"
		}
		out = append(out, fmt.Sprintf("memory limit %d MiB for the whole command (cgroup %s)", s.MemoryBytes>>20, v))
	}
	if s.Processes > 0 && c.hasPids() {
		v := "v2"
		if b.v1Pids != "" {
			v = "v1"
		}
		out = append(out, fmt.Sprintf("process limit %d (cgroup %s pids)", s.Processes, v))
	}
	return out
}

// oomKilled says whether the kernel killed a process of the command
// because the command's memory limit was reached.
func (b *boxCgroup) oomKilled() bool {
	count := func(file, key string) int {
		data, err := os.ReadFile(file)
		if err != nil {
			return 0
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, key+" "); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
		return 0
	}
	if b.dir != "" && count(filepath.Join(b.dir, "memory.events"), "oom_kill") > 0 {
		return true
	}
	return b.v1Memory != "" && count(filepath.Join(b.v1Memory, "memory.oom_control"), "oom_kill") > 0
}

// watchOOM calls stop (once) when the command's v1 memory cgroup runs out of
// memory (cgroup v1's OOM notification), so that the command is stopped
// as a whole, as memory.oom.group does on v2. The returned func ends the
// watch. Without a v1 memory cgroup it does nothing.
func (b *boxCgroup) watchOOM(stop func()) *oomWatch {
	w := &oomWatch{end: func() {}}
	if b.v1Memory == "" {
		return w
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return w
	}
	ev := os.NewFile(uintptr(efd), "oom-event")
	ctl, err := os.Open(filepath.Join(b.v1Memory, "memory.oom_control"))
	if err != nil {
		ev.Close()
		return w
	}
	defer ctl.Close()
	reg := fmt.Sprintf("%d %d", efd, ctl.Fd())
	if err := os.WriteFile(filepath.Join(b.v1Memory, "cgroup.event_control"), []byte(reg), 0); err != nil {
		ev.Close()
		return w
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 8)
		// Returns on an event (sent when the cgroup hits its limit, before
		// the kernel picks a process to kill), or with an error when ev is
		// closed: the watch ends before the cgroup is removed, whose
		// removal would also be an event.
		if _, err := ev.Read(buf); err == nil {
			w.fired.Store(true)
			stop()
		}
	}()
	w.end = func() {
		ev.Close()
		<-done
	}
	return w
}

// oomWatch is a running watchOOM.
type oomWatch struct {
	fired atomic.Bool
	end   func()
}

// kill kills every process of the command's cgroups that it can reach:
// cgroup.kill on v2; on v1, each process listed.
func (b *boxCgroup) kill() {
	if b.dir != "" {
		os.WriteFile(filepath.Join(b.dir, "cgroup.kill"), []byte("1"), 0)
	}
	for _, d := range []string{b.v1Memory, b.v1Pids} {
		if d == "" {
			continue
		}
		data, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
}

// destroy kills every process in the cgroups and removes them.
func (b *boxCgroup) destroy() {
	if b.fd != nil {
		b.fd.Close()
	}
	for _, d := range []string{b.dir, b.v1Memory, b.v1Pids} {
		if d == "" {
			continue
		}
		for range 500 {
			b.kill()
			if err := os.Remove(d); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}
