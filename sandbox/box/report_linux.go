package box

import (
	"fmt"
	"os"
	"strings"
)

func (b *Box) layers(out Outcome, runErr error) Report {
	m := b.caps
	var ls []Layer
	if runErr != nil {
		ls = append(ls, Layer{Name: "box", Detail: runErr.Error(), Without: "commands cannot run"})
	}
	ls = append(ls, Layer{Name: "user namespace", OK: m.userns, Detail: okOr(m.userns, "user namespaces work for this user", m.nsErr),
		Without: "network and PID namespaces need root; see those layers"})
	netns := m.cloneflags != 0
	ls = append(ls, Layer{Name: "network namespace", OK: netns, Detail: okOr(netns, "commands have no network; allowed hosts go through bridle's proxy", m.nsErr),
		Without: "commands share the host network; Landlock (ABI 4+) limits TCP connects to the proxy port and seccomp blocks UDP and raw sockets"})
	ls = append(ls, Layer{Name: "pid namespace", OK: netns, Detail: okOr(netns, "the box dies whole with its first process", m.nsErr),
		Without: "a subreaper supervisor kills every process left behind; a process that gets out of its tree is missed"})
	pc, ok := has(out.Applied, "process cap")
	detail := pc
	if !ok {
		detail, _ = has(out.Missing, "process cap")
		if detail == "" {
			detail = "no process cap was applied"
		}
	}
	ls = append(ls, Layer{Name: "process cap", OK: ok, Detail: detail,
		Without: "a fork bomb is stopped only by the timeout and the per-process memory cap"})
	llDetail := fmt.Sprintf("ABI %d: writes only in the workspace and a private temp dir", m.landlock)
	if m.landlock >= 9 {
		llDetail += "; Unix sockets outside the box unreachable"
	}
	ls = append(ls, Layer{Name: "landlock", OK: m.landlock > 0 && !b.opts.NoLandlock, Detail: okOr(m.landlock > 0, llDetail, "not in this kernel or not enabled at boot (lsm=landlock)"),
		Without: "commands can write anywhere this user can"})
	sc := m.seccomp && !b.opts.NoSeccomp
	ls = append(ls, Layer{Name: "seccomp", OK: sc, Detail: okOr(sc, "keyrings, bpf, io_uring denied; Unix sockets denied unless allowed", "not available"),
		Without: "commands can reach desktop daemons through Unix sockets (D-Bus, Docker) and the user's kernel keyrings"})
	cg := cgroupV2()
	ls = append(ls, Layer{Name: "cgroup v2", OK: cg == "", Detail: okOr(cg == "", "memory and pids controllers delegated", cg),
		Without: "memory is capped per process (RLIMIT_AS), not for the command as a whole"})
	// Anything else the probe run reported missing.
	for _, s := range out.Missing {
		if !strings.HasPrefix(s, "process cap") && !strings.HasPrefix(s, "namespaces") && !strings.HasPrefix(s, "landlock") && !strings.HasPrefix(s, "seccomp") {
			ls = append(ls, Layer{Name: "other", Detail: s, Without: s})
		}
	}
	return Report{Layers: ls}
}

func okOr(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// cgroupV2 returns "" when this process's cgroup v2 can host a child with
// the memory and pids controllers, or why not. bridle does not yet move
// commands into cgroups; the report says so.
func cgroupV2() string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "no /proc/self/cgroup"
	}
	var path string
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return "no cgroup v2 hierarchy for this process"
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	mnt := ""
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 8 && strings.Contains(line, " - cgroup2 ") {
			mnt = f[4]
		}
	}
	if mnt == "" {
		return "cgroup2 is not mounted"
	}
	ctl, _ := os.ReadFile(mnt + path + "/cgroup.controllers")
	for _, c := range []string{"memory", "pids"} {
		if !strings.Contains(" "+strings.TrimSpace(string(ctl))+" ", " "+c+" ") {
			return fmt.Sprintf("the %s controller is not available in %s%s (cgroup v1 or not delegated)", c, mnt, path)
		}
	}
	return "delegated, but bridle does not use cgroups yet"
}
