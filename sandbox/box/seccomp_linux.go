package box

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompPolicy says what the filter denies besides the fixed list.
type seccompPolicy struct {
	DenyUnix bool // socket(AF_UNIX, ...): pathname sockets reach daemons outside
	DenyInet bool // UDP, raw and packet sockets: only without a network namespace
	// DenyUserNS refuses new user namespaces: inside one a command has
	// every capability again (over its own namespaces), which is how most
	// kernel exploits reach code that otherwise needs privileges.
	DenyUserNS bool
	// WatchWrites hands the calls that can change a file to a listener
	// (writes_linux.go) before the kernel runs them.
	WatchWrites bool
}

// deniedSyscalls are never needed by builds and tests and widen the
// kernel's attack surface or reach outside the box: kernel keyrings hold
// the user's secrets; bpf, perf and userfaultfd are exploit primitives;
// io_uring bypasses seccomp; the rest need privileges a box never has.
func deniedSyscalls() []uint32 {
	return []uint32{
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
		unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
		unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
		unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	}
}

func auditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	}
	return 0, false
}

// seccompAvailable reports whether this build can filter on this machine.
func seccompAvailable() bool {
	if _, ok := auditArch(); !ok {
		return false
	}
	// PR_GET_SECCOMP fails with EINVAL without CONFIG_SECCOMP.
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err == nil
}

// installSeccomp loads the filter on the calling thread, which must then
// execve: the filter is inherited by the program and all its children.
// no_new_privs must be set. With p.WatchWrites it returns the filter's
// listener, or, when the kernel refuses one (before Linux 5.5, or under
// a filter that has one already: bridle in another supervisor's box),
// loads the filter without the watch and says why in watchErr.
func installSeccomp(p seccompPolicy) (listener int, watchErr, err error) {
	if p.WatchWrites {
		fd, err := loadSeccomp(p)
		if err == nil {
			return fd, nil, nil
		}
		watchErr = err
		p.WatchWrites = false
	}
	_, err = loadSeccomp(p)
	return -1, watchErr, err
}

// loadSeccomp builds the filter of p and loads it; it returns the
// listener with p.WatchWrites.
func loadSeccomp(p seccompPolicy) (int, error) {
	arch, ok := auditArch()
	if !ok {
		return -1, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	const (
		offNr   = 0
		offArch = 4
		offArgs = 16 // low 32 bits of args[0] (little endian); args[i] at offArgs+8*i
		offArg0 = offArgs
		offArg1 = offArgs + 8
	)
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	var prog []unix.SockFilter
	stmt := func(code uint16, k uint32) { prog = append(prog, unix.SockFilter{Code: code, K: k}) }
	jump := func(code uint16, k uint32, jt, jf uint8) {
		prog = append(prog, unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k})
	}
	ld := uint16(unix.BPF_LD | unix.BPF_W | unix.BPF_ABS)
	jeq := uint16(unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K)
	ret := uint16(unix.BPF_RET | unix.BPF_K)

	// Another architecture's calling convention (x32, ia32) would bypass
	// the numbers below: refuse it.
	stmt(ld, offArch)
	jump(jeq, arch, 1, 0)
	stmt(ret, unix.SECCOMP_RET_KILL_PROCESS)
	stmt(ld, offNr)
	if runtime.GOARCH == "amd64" {
		// x32 syscalls have bit 30 set.
		jump(uint16(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_K), 0x40000000, 0, 1)
		stmt(ret, errno(unix.ENOSYS))
	}
	for _, nr := range deniedSyscalls() {
		jump(jeq, nr, 0, 1)
		stmt(ret, errno(unix.EPERM))
	}
	if p.DenyUserNS {
		// clone3 passes its flags in a struct the filter cannot read:
		// ENOSYS makes libc and Go fall back to clone (as container
		// runtimes' default profiles do).
		jump(jeq, unix.SYS_CLONE3, 0, 1)
		stmt(ret, errno(unix.ENOSYS))
		// unshare(flags) and clone(flags, ...): EPERM with CLONE_NEWUSER.
		jump(jeq, unix.SYS_UNSHARE, 1, 0)
		jump(jeq, unix.SYS_CLONE, 0, 4)
		stmt(ld, offArg0)
		stmt(uint16(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K), unix.CLONE_NEWUSER)
		jump(jeq, unix.CLONE_NEWUSER, 0, 1)
		stmt(ret, errno(unix.EPERM))
		stmt(ld, offNr) // the checks below compare the number again
	}
	if p.WatchWrites {
		notify := func(c watchedCall) {
			switch {
			case c.kind == callOpen:
				// Only opens with a write flag: reads go on unwatched.
				jump(jeq, c.nr, 0, 4)
				stmt(ld, uint32(offArgs+8*c.flags))
				jump(uint16(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K), writeFlags, 0, 1)
				stmt(ret, unix.SECCOMP_RET_USER_NOTIF)
				stmt(ret, unix.SECCOMP_RET_ALLOW)
			case c.kind == callRemove && c.flags >= 0:
				// unlinkat: not for an (empty) directory.
				jump(jeq, c.nr, 0, 4)
				stmt(ld, uint32(offArgs+8*c.flags))
				jump(uint16(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K), unix.AT_REMOVEDIR, 0, 1)
				stmt(ret, unix.SECCOMP_RET_ALLOW)
				stmt(ret, unix.SECCOMP_RET_USER_NOTIF)
			default:
				jump(jeq, c.nr, 0, 1)
				stmt(ret, unix.SECCOMP_RET_USER_NOTIF)
			}
		}
		for _, c := range watchedCalls() {
			notify(c)
		}
	}
	if p.DenyUnix || p.DenyInet {
		// if nr != socket: allow
		jump(jeq, unix.SYS_SOCKET, 1, 0)
		stmt(ret, unix.SECCOMP_RET_ALLOW)
		stmt(ld, offArg0)
		if p.DenyUnix {
			jump(jeq, unix.AF_UNIX, 0, 1)
			stmt(ret, errno(unix.EACCES))
		}
		if p.DenyInet {
			jump(jeq, unix.AF_PACKET, 0, 1)
			stmt(ret, errno(unix.EACCES))
			// AF_INET or AF_INET6: only stream sockets.
			jump(jeq, unix.AF_INET, 1, 0)
			jump(jeq, unix.AF_INET6, 0, 4)
			stmt(ld, offArg1)
			stmt(uint16(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K), 0xf)
			jump(jeq, unix.SOCK_STREAM, 1, 0)
			stmt(ret, errno(unix.EACCES))
		}
	}
	stmt(ret, unix.SECCOMP_RET_ALLOW)

	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("no_new_privs: %w", err)
	}
	var flags uintptr
	if p.WatchWrites {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	}
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		if p.WatchWrites {
			return -1, fmt.Errorf("seccomp listener: %w", e)
		}
		return -1, fmt.Errorf("seccomp filter: %w", e)
	}
	if !p.WatchWrites {
		return -1, nil
	}
	return int(fd), nil
}
