package box

import (
	"fmt"
	"slices"
	"strings"
)

// reported are the prefixes of what the layers above say about a run;
// anything else a run reports missing is listed as it is.
var reported = []string{"process cap", "private /dev/shm", "namespaces", "landlock", "seccomp", "cgroup", "write watch",
	"read-only root", "hidden paths", "own /proc", "private $TMPDIR", "mount namespace"}

func (b *Box) layers(out Outcome, runErr error) Report {
	m := b.caps
	var ls []Layer
	if runErr != nil {
		ls = append(ls, Layer{Name: "box", Detail: runErr.Error(), Without: "commands cannot run"})
	}
	ls = append(ls, Layer{Name: "user namespace", OK: m.userns, Detail: okOr(m.userns, "user namespaces work for this user", m.nsErr),
		Without: "network and PID namespaces need root; see those layers"})
	netns := m.cloneflags != 0
	ls = append(ls, Layer{Name: "network namespace", OK: netns, Detail: okOr(netns, "commands have no network but the session's background servers at localhost; allowed hosts go through bridle's proxy", m.nsErr),
		Without: "commands share the host network; Landlock (ABI 4+) limits TCP connects to the proxy port and seccomp blocks UDP and raw sockets"})
	ls = append(ls, Layer{Name: "pid namespace", OK: netns, Detail: okOr(netns, "the box dies whole with its first process", m.nsErr),
		Without: "a subreaper supervisor kills every process left behind; a process that gets out of its tree is missed"})
	shm, shmOK := applied(out, "private /dev/shm", "no private /dev/shm was mounted")
	ls = append(ls, Layer{Name: "mount namespace", OK: shmOK, Detail: shm,
		Without: "/dev/shm is read-only to commands; POSIX shared memory and semaphores (Python multiprocessing locks) fail"})
	ro, ok := applied(out, "read-only root", "the rest of the machine was not made read-only")
	ls = append(ls, Layer{Name: "read-only root", OK: ok, Detail: okOr(ok, "everything outside the workspace and the private temp dir is read-only (EROFS): no chmod, chown, utime or xattr changes outside", ro),
		Without: "Landlock still confines writes of file content, but commands can change permissions, owners, times and extended attributes of files outside the workspace"})
	hd, ok := applied(out, "hidden paths", "nothing was hidden")
	ls = append(ls, Layer{Name: "hidden paths", OK: ok, Detail: okOr(ok, "bridle's own files (settings, database, artifacts, cache, trust records) and the credential stores (~/.ssh, ~/.aws, ...) are empty to commands", hd),
		Without: "commands can read bridle's database (every session) and the credential stores; commands are refused in a workspace that contains bridle's own files"})
	pr, ok := applied(out, "own /proc", "the box has the host's /proc")
	ls = append(ls, Layer{Name: "own /proc", OK: ok, Detail: okOr(ok, "commands see only their own processes", pr),
		Without: "commands can list the host's processes and read their command lines"})
	tmp, ok := applied(out, "private $TMPDIR", "the private temp dir is on the host's disk")
	ls = append(ls, Layer{Name: "tmpfs limits", OK: ok && shmOK, Detail: okOr(ok && shmOK, tmp+"; "+shm+" (sandbox.command.tmp_mb, shm_mb)", tmp),
		Without: "the private temp dir has no size limit of its own"})
	un, ok := applied(out, "no new user namespaces", "user namespaces are not denied")
	ls = append(ls, Layer{Name: "nested user ns", OK: ok, Detail: okOr(ok, "unshare and clone with CLONE_NEWUSER fail (EPERM); clone3 falls back to clone (sandbox.command.allow_user_namespaces allows them)", un),
		Without: "a command can create a user namespace and have every capability inside it, a common first step of kernel exploits"})
	pc, ok := applied(out, "process cap", "no process cap was applied")
	ls = append(ls, Layer{Name: "process cap", OK: ok, Detail: pc,
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
	ww := m.writesErr == nil && !b.opts.NoSeccomp
	wwDetail := "the box tells bridle which file a command is about to change, before it changes it (seccomp listener): a rewind's checkpoints cost what a command changes"
	if !ww {
		wwDetail = "seccomp is switched off"
		if m.writesErr != nil {
			wwDetail = m.writesErr.Error()
		}
	}
	ls = append(ls, Layer{Name: "write watch", OK: ww, Detail: wwDetail,
		Without: "bridle scans the workspace before and after each command to checkpoint what it changes: a copy of every file on a session's first command, and none past 20,000 files or 10,000 directories (each command's result then says its changes were not recorded)"})
	cgDetail := m.cgroupErr
	if m.cgroup != nil {
		cgDetail = m.cgroup.describe()
	}
	ls = append(ls, Layer{Name: "cgroup limits", OK: m.cgroup.hasMemory() && m.cgroup.hasPids(), Detail: cgDetail,
		Without: "memory is capped per process (RLIMIT_AS), not for the command as a whole; processes are capped and killed by the layers above"})
	// Anything else the probe run reported missing.
	for _, s := range out.Missing {
		if !slices.ContainsFunc(reported, func(p string) bool { return strings.HasPrefix(s, p) }) {
			ls = append(ls, Layer{Name: "other", Detail: s, Without: s})
		}
	}
	return Report{Layers: ls}
}

// applied says whether the probe run applied the layer named by prefix,
// with what it said of it, or of its absence (none when it said nothing).
func applied(out Outcome, prefix, none string) (string, bool) {
	if s, ok := has(out.Applied, prefix); ok {
		return s, true
	}
	if s, _ := has(out.Missing, prefix); s != "" {
		return s, false
	}
	return none, false
}

func okOr(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// probeCommand is the command Report runs.
const probeCommand = "true"

// bootStamp is "": probeKey reads the boot's id from /proc.
func bootStamp() string { return "" }
