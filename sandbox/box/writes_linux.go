package box

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watching writes: the seccomp filter returns SECCOMP_RET_USER_NOTIF for
// the calls that can change a file (opens with a write flag, truncate,
// unlink, rename, link, mknod), and the helper hands the filter's
// listener to bridle, which is told of each such call before the kernel
// runs it, finds the file it names as the calling process sees it, tells
// Spec.Writes, then lets the call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
// The command's call is not changed: the kernel runs it as it would have.
// The seccomp documentation's caveat holds: a program can change the path
// in its memory after bridle read it (a thread racing its own call), so
// this tells bridle what a command changes, it enforces nothing; the
// confinement is Landlock's and the mount namespace's.

// writeFlags are the open flags that can change a file.
const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// callKind is what a watched call does to the file its path names.
type callKind int

const (
	callOpen     callKind = iota // open, openat: flags in an argument
	callOpenHow                  // openat2: flags in struct open_how
	callCreat                    // creat: open with O_CREAT|O_WRONLY|O_TRUNC
	callTruncate                 // truncate
	callRemove                   // unlink, unlinkat (not AT_REMOVEDIR)
	callRename                   // rename, renameat, renameat2
	callLink                     // link, linkat: a new name
	callMknod                    // mknod, mknodat: a new file when S_IFREG
)

// watchedCall says where a watched call's arguments are: the directory
// descriptor (-1: relative to the working directory) and path of its
// file, of its second file (a rename's or link's target; -1 when none),
// and its flags or mode (-1 when none).
type watchedCall struct {
	nr            uint32
	kind          callKind
	dirfd, path   int
	dirfd2, path2 int
	flags         int
}

// seccompNotif and seccompResp are the kernel's struct seccomp_notif and
// seccomp_notif_resp.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// watch serves one command's listener.
type watch struct {
	fd    int
	wake  int // an eventfd: written when the box is done
	w     Writes
	calls map[int32]watchedCall
	// dirs are the writable directories as given and as the kernel
	// names them (links resolved); tmp is the box's own temp dir.
	dirs []writableDir
	tmp  string
	// root is the box's root, opened by rootOf (0 until then).
	root     int
	stopping atomic.Bool
	done     chan struct{}
	// ctx is Changing's: cancel ends it when the watch stops, so that a
	// Writes busy with a call (keeping a renamed directory's files) does
	// not hold the command's end.
	ctx    context.Context
	cancel context.CancelFunc
}

type writableDir struct{ given, real string }

// serveWrites starts telling w of the changes the command whose listener
// is fd is about to make, with ctx (the command's run: its timeout and
// cancel end what w does); stop ends it. It cannot fail: a listener no
// one serves would fail every watched call of the command (ENOSYS).
func serveWrites(ctx context.Context, fd int, w Writes, writable []string, tmp string) *watch {
	// Without an eventfd (no descriptor left), the loop wakes up every
	// few milliseconds to see whether it is to stop.
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		wake = -1
	}
	// The command's call waits for bridle: where the kernel can (6.6+), it
	// switches to bridle's thread at once, and back, on the same CPU.
	unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	wt := &watch{fd: fd, wake: wake, w: w, calls: map[int32]watchedCall{}, tmp: tmp, done: make(chan struct{})}
	wt.ctx, wt.cancel = context.WithCancel(ctx)
	for _, c := range watchedCalls() {
		wt.calls[int32(c.nr)] = c
	}
	for _, d := range writable {
		if d == tmp {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			real = d
		}
		wt.dirs = append(wt.dirs, writableDir{d, real})
	}
	go wt.serve()
	return wt
}

// stop waits, once every process of the box is gone, for the last call
// to be told (ending what w still does for it), and closes the listener.
func (wt *watch) stop() {
	wt.stopping.Store(true)
	wt.cancel()
	if wt.wake >= 0 {
		one := [8]byte{1} // an eventfd counts in a native uint64
		unix.Write(wt.wake, one[:])
	}
	<-wt.done
	unix.Close(wt.fd)
	if wt.wake >= 0 {
		unix.Close(wt.wake)
	}
	if wt.root > 0 {
		unix.Close(wt.root)
	}
}

func (wt *watch) serve() {
	defer close(wt.done)
	fds := []unix.PollFd{{Fd: int32(wt.fd), Events: unix.POLLIN}, {Fd: int32(wt.wake), Events: unix.POLLIN}}
	timeout := -1
	if wt.wake < 0 {
		fds, timeout = fds[:1], 5
	}
	for {
		for i := range fds {
			fds[i].Revents = 0
		}
		n, err := unix.Poll(fds, timeout)
		switch {
		case err != nil && errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return
		case fds[0].Revents&unix.POLLIN != 0:
			wt.next()
			continue // what is pending is served before the wake is heard
		case fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0, n > 0, wt.stopping.Load():
			return
		}
	}
}

// next receives one call, tells w of it and lets it go on.
func (wt *watch) next() {
	var n seccompNotif
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(wt.fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n))); e != 0 {
		return // ENOENT: the caller died before it was received
	}
	if c, ok := wt.calls[n.Nr]; ok {
		for _, ch := range wt.changes(&n, c) {
			wt.w.Changing(wt.ctx, ch)
		}
	}
	resp := seccompResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	unix.Syscall(unix.SYS_IOCTL, uintptr(wt.fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
}

// valid says the call n is still waiting: its process did not die and
// its pid was not reused since n was received, so what was read of the
// process is the caller's.
func (wt *watch) valid(n *seccompNotif) bool {
	id := n.ID
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(wt.fd), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// changes are what call n is about to change.
func (wt *watch) changes(n *seccompNotif, c watchedCall) []Change {
	mem := memory(n.Pid)
	arg := func(i int) uint64 { return n.Args[i] }
	dirfd := func(i int) int {
		if i < 0 {
			return unix.AT_FDCWD
		}
		return int(int32(arg(i)))
	}
	path, err := mem.str(arg(c.path))
	if err != nil {
		return []Change{{Unknown: fmt.Sprintf("the box could not read the path of a command's call (%v)", err)}}
	}
	var path2 string
	if c.path2 >= 0 {
		if path2, err = mem.str(arg(c.path2)); err != nil {
			return []Change{{Unknown: fmt.Sprintf("the box could not read the path of a command's call (%v)", err)}}
		}
	}
	var flags uint64
	switch {
	case c.kind == callOpenHow:
		// struct open_how { u64 flags; u64 mode; u64 resolve; }
		var b [8]byte
		if err := mem.read(b[:], arg(2)); err != nil {
			return []Change{{Unknown: fmt.Sprintf("the box could not read the flags of %s's openat2 (%v)", path, err)}}
		}
		flags = *(*uint64)(unsafe.Pointer(&b[0]))
	case c.kind == callCreat:
		flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	case c.flags >= 0:
		flags = arg(c.flags)
	}
	if !wt.valid(n) {
		return nil // it died: its call will not run
	}
	r := resolver{wt: wt, pid: n.Pid}
	one := func(dfd int, p string, follow, create bool) []Change {
		pl, err := r.place(dfd, p, follow, create)
		switch {
		case err != nil:
			return []Change{{Unknown: fmt.Sprintf("%s (%v)", p, err)}}
		case pl.path == "" && pl.reg && pl.links > 1 && wt.onDevice(pl.dev):
			// Changed through a name outside the workspace (the box's
			// temp dir): its other names may be the workspace's.
			return []Change{{Unknown: fmt.Sprintf("%s (a file with other hard links, written through a name outside the workspace)", p)}}
		case pl.path == "" || pl.dir || (pl.exists && !pl.reg):
			return nil // not a file of the workspace: nothing to keep
		}
		return []Change{{Path: pl.path}}
	}
	switch c.kind {
	case callOpen, callOpenHow, callCreat:
		if flags&writeFlags == 0 {
			return nil
		}
		return one(dirfd(c.dirfd), path, flags&unix.O_NOFOLLOW == 0, flags&unix.O_CREAT != 0)
	case callTruncate:
		return one(dirfd(c.dirfd), path, true, false)
	case callRemove:
		if flags&unix.AT_REMOVEDIR != 0 {
			return nil // an empty directory: no file goes with it
		}
		return one(dirfd(c.dirfd), path, false, false)
	case callLink:
		return one(dirfd(c.dirfd2), path2, false, true)
	case callMknod:
		if t := flags & unix.S_IFMT; t != 0 && t != unix.S_IFREG {
			return nil // a device, pipe or socket
		}
		return one(dirfd(c.dirfd), path, false, true)
	}
	// A rename: what leaves from and what it replaces or fills at to.
	from, err := r.place(dirfd(c.dirfd), path, false, false)
	if err != nil {
		return []Change{{Unknown: fmt.Sprintf("%s (%v)", path, err)}}
	}
	to, err := r.place(dirfd(c.dirfd2), path2, false, true)
	if err != nil {
		return []Change{{Unknown: fmt.Sprintf("%s (%v)", path2, err)}}
	}
	if from.path == "" && to.path == "" {
		return nil
	}
	switch {
	case from.path == "" && from.dir && from.inside:
		// Below a writable directory, but not bridle's directory of that
		// name: a hidden path's stand-in (a mount point, which the kernel
		// will not rename).
		return []Change{{Unknown: fmt.Sprintf("%s (a directory the command sees in place of the workspace's, such as a hidden path's stand-in)", path)}}
	case from.path == "" && from.dir:
		// A directory coming in from elsewhere (only where the box has
		// no mount namespace: a rename between mounts fails): its files
		// are not named one by one.
		return []Change{{Unknown: fmt.Sprintf("%s (a directory moved in from outside the workspace)", path2)}}
	}
	return []Change{{Path: from.path, To: to.path, Exchange: flags&unix.RENAME_EXCHANGE != 0}}
}

// memory is a process's memory, read with process_vm_readv (one call,
// where /proc/PID/mem takes three).
type memory int

// read fills b from addr; a read across the end of a mapping is short.
func (m memory) read(b []byte, addr uint64) error {
	n, err := unix.ProcessVMReadv(int(m), []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}, 0)
	switch {
	case err != nil:
		return err
	case n < len(b):
		return unix.EFAULT
	}
	return nil
}

// str reads the NUL-terminated string at addr, a page at a time (a read
// across the end of a mapping fails).
func (m memory) str(addr uint64) (string, error) {
	const page = 4096
	var out []byte
	buf := make([]byte, page)
	for len(out) < unix.PathMax {
		n := page - int(addr%page)
		if err := m.read(buf[:n], addr); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:n]...)
		addr += uint64(n)
	}
	return "", unix.ENAMETOOLONG
}

// place is where a path leads.
type place struct {
	// path is the file as bridle names it, "" when it is not one of the
	// writable directories' (outside them, in the box's own temp dir, or
	// a hidden path's stand-in).
	path string
	// inside says the name is below a writable directory, whether or
	// not bridle finds the same file there.
	inside           bool
	exists, dir, reg bool
	// links and dev of an existing file: a file with other hard links
	// on a workspace's device may be a workspace file under another name.
	links, dev uint64
}

// resolver finds files as one process of the box sees them: through its
// root (its mount namespace) and its descriptors.
type resolver struct {
	wt  *watch
	pid uint32
}

// rootOf is the box's root as process pid sees it, opened once: every
// process of a box has the same, since changing its root or mount
// namespace takes capabilities it does not have. Not so with
// Spec.AllowUserNamespaces: a process in a user namespace of its own can
// make a mount namespace and mount over the workspace's names there
// (bind one file over another), and then bridle, looking through the
// box's root, names a file other than the one it changes; durability.md
// lists it with the seccomp path race.
func (wt *watch) rootOf(pid uint32) (int, error) {
	if wt.root > 0 {
		return wt.root, nil
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("the box could not see the process's files: %w", err)
	}
	wt.root = fd
	return fd, nil
}

// place is where path, relative to the process's dirfd, leads: the last
// element followed if follow; a file that does not exist is where it
// would be made if create.
func (r *resolver) place(dirfd int, path string, follow, create bool) (place, error) {
	if path == "" {
		return place{}, nil
	}
	root, err := r.wt.rootOf(r.pid)
	if err != nil {
		return place{}, err
	}
	abs := path
	if !filepath.IsAbs(path) {
		base := fmt.Sprintf("/proc/%d/cwd", r.pid)
		if dirfd != unix.AT_FDCWD {
			base = fmt.Sprintf("/proc/%d/fd/%d", r.pid, dirfd)
		}
		dir, err := os.Readlink(base)
		if err != nil || !filepath.IsAbs(dir) {
			return place{}, nil // no such descriptor, or not a directory: the call fails
		}
		abs = dir + "/" + path
	}
	for range 40 {
		abs = r.selfless(abs)
		// The process's own /proc entries are magic links into its
		// descriptors, followed in bridle's /proc.
		dir, resolve := root, uint64(unix.RESOLVE_IN_ROOT)
		if strings.HasPrefix(abs, fmt.Sprintf("/proc/%d/", r.pid)) {
			dir, resolve = unix.AT_FDCWD, 0
		}
		parent, base := filepath.Split(abs)
		if follow && !create || base == "" || base == "." || base == ".." {
			// The file, followed to its end.
			how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve}
			if !follow {
				how.Flags |= unix.O_NOFOLLOW
			}
			fd, err := unix.Openat2(dir, abs, &how)
			if err != nil {
				return place{}, unfollowed(err)
			}
			defer unix.Close(fd)
			return r.placeOf(fd, "", nil)
		}
		// The last element looked at by name in its directory: a file
		// to be made, to be removed or renamed, or a link to follow.
		how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve}
		pfd, err := unix.Openat2(dir, parent, &how)
		if err != nil {
			return place{}, unfollowed(err)
		}
		var st unix.Stat_t
		err = unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK && follow {
			target, rerr := readlinkat(pfd, base)
			where, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", pfd))
			unix.Close(pfd)
			if rerr != nil {
				return place{}, nil
			}
			if !filepath.IsAbs(target) {
				target = where + "/" + target
			}
			abs = target
			continue
		}
		defer unix.Close(pfd)
		switch {
		case err == nil:
			return r.placeOf(pfd, base, &st)
		case errors.Is(err, unix.ENOENT) && create:
			return r.placeOf(pfd, base, nil)
		}
		return place{}, nil // the call fails as it did here
	}
	return place{}, errors.New("too many links")
}

// unfollowed is what a failed lookup means for the watch: a link it may
// not follow leaves the file unknown; anything else fails the call too.
func unfollowed(err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return errors.New("a link the box cannot follow")
	}
	return nil
}

// selfless names the process's /proc/self (and thread-self) by its pid:
// bridle is not in the box's PID namespace, where they would lead.
func (r *resolver) selfless(abs string) string {
	pid := strconv.Itoa(int(r.pid))
	for _, alias := range []struct{ from, to string }{
		{"/proc/self", "/proc/" + pid}, {"/proc/thread-self", "/proc/" + pid},
		{"/dev/fd", "/proc/" + pid + "/fd"},
		{"/dev/stdin", "/proc/" + pid + "/fd/0"}, {"/dev/stdout", "/proc/" + pid + "/fd/1"}, {"/dev/stderr", "/proc/" + pid + "/fd/2"},
	} {
		if abs == alias.from || strings.HasPrefix(abs, alias.from+"/") {
			return alias.to + abs[len(alias.from):]
		}
	}
	return abs
}

// placeOf is the place of the file open as fd (O_PATH), or, with base,
// of the entry base of the directory fd: st is its stat (nil: it does not
// exist yet). Its path is bridle's only when bridle finds the same file
// under it: the box has its own temp dir and hides paths under
// stand-ins.
func (r *resolver) placeOf(fd int, base string, st *unix.Stat_t) (place, error) {
	name, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return place{}, nil
	}
	var in unix.Stat_t
	if unix.Fstat(fd, &in) != nil {
		return place{}, nil
	}
	var pl place
	if base == "" {
		st = &in
	} else {
		name = filepath.Join(name, base)
	}
	if st != nil {
		t := st.Mode & unix.S_IFMT
		pl = place{exists: true, dir: t == unix.S_IFDIR, reg: t == unix.S_IFREG, links: uint64(st.Nlink), dev: uint64(st.Dev)}
	}
	given, ok := r.wt.given(name)
	if !ok {
		return pl, nil
	}
	pl.inside = true
	// Bridle's own file at that name must be the one the process sees:
	// the file itself, or the directory a new one is made in.
	var here unix.Stat_t
	switch {
	case st != nil:
		if unix.Lstat(name, &here) != nil || here.Dev != st.Dev || here.Ino != st.Ino {
			return pl, nil
		}
	default:
		if unix.Lstat(filepath.Dir(name), &here) != nil || here.Dev != in.Dev || here.Ino != in.Ino {
			return pl, nil
		}
	}
	pl.path = given
	return pl, nil
}

// onDevice says whether dev is the device of a writable directory.
func (wt *watch) onDevice(dev uint64) bool {
	for _, d := range wt.dirs {
		var st unix.Stat_t
		if unix.Stat(d.real, &st) == nil && uint64(st.Dev) == dev {
			return true
		}
	}
	return false
}

// given is name (as the kernel names it) below the writable directory it
// is in, as the box was given that directory.
func (wt *watch) given(name string) (string, bool) {
	if wt.tmp != "" && under(name, wt.tmp) {
		return "", false
	}
	for _, d := range wt.dirs {
		if under(name, d.real) {
			return d.given + strings.TrimPrefix(name, d.real), true
		}
	}
	return "", false
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
