package box

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Default sizes of a box's private temp dir and /dev/shm: both are
// tmpfs, so what a command writes there is memory.
const (
	DefaultTmpBytes = 512 << 20
	DefaultShmBytes = 512 << 20
)

// setupMounts shapes the box's mount namespace, after which the command
// sees:
//
//   - its own /proc (the box's PID namespace: no host processes),
//   - a /dev/shm and a $TMPDIR of its own, tmpfs of a bounded size,
//   - the workspace read-write, and everything else read-only, so that
//     metadata changes Landlock does not govern (chmod, chown, utime,
//     xattrs, writes through a hard link) fail with EROFS outside it,
//   - an empty, read-only directory (or an empty file) in place of each
//     hidden path: bridle's own files and the credential stores.
//
// Layers that could not be set up are reported missing; a hidden path
// that cannot be hidden stops the command (ownShm reports the private
// /dev/shm, which Landlock then lets the command write).
func setupMounts(cfg helperConfig, applied, missing func(string)) (ownShm bool, err error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		missing("mount namespace: make mounts private: " + err.Error())
		return false, hiddenUnenforced(cfg)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		missing("own /proc: the host's processes are visible to commands: " + err.Error())
	} else {
		applied("own /proc")
	}
	shm := orBytes(cfg.ShmBytes, DefaultShmBytes)
	if err := mountTmpfs("/dev/shm", shm, 0o1777); err != nil {
		missing("private /dev/shm (POSIX shared memory and semaphores are unavailable): " + err.Error())
	} else {
		ownShm = true
		applied(fmt.Sprintf("private /dev/shm (%d MiB)", shm>>20))
	}
	if cfg.TmpDir != "" {
		tmp := orBytes(cfg.TmpBytes, DefaultTmpBytes)
		if err := mountTmpfs(cfg.TmpDir, tmp, 0o700); err != nil {
			missing("private $TMPDIR size limit: it is a directory on the host's disk: " + err.Error())
		} else {
			applied(fmt.Sprintf("private $TMPDIR (%d MiB)", tmp>>20))
		}
	}
	if err := readOnlyOutside(cfg.Writable, cfg.TmpDir); err != nil {
		missing("read-only root: " + err.Error() + "; commands can change permissions, owners, times and extended attributes of files outside the workspace")
	} else {
		applied("read-only root")
	}
	n, err := hide(cfg.Hidden, cfg.Writable, cfg.Private)
	if err != nil {
		return ownShm, err
	}
	if len(cfg.Hidden) > 0 {
		applied(fmt.Sprintf("hidden paths (%d of %d present)", n, len(cfg.Hidden)))
	}
	return ownShm, nil
}

// hiddenUnenforced is the answer when paths cannot be hidden: commands
// may run only if none of the hidden paths can be written by them
// (Landlock lets them write the workspace, and bridle's own files in it
// would be theirs to rewrite).
func hiddenUnenforced(cfg helperConfig) error {
	for _, h := range cfg.Hidden {
		for _, w := range cfg.Writable {
			if under(h, w) {
				return fmt.Errorf("the workspace %s contains %s, which commands must not reach, and this machine has no mount namespaces to hide it (see `bridle doctor`): open a directory that does not contain it", w, h)
			}
		}
	}
	return nil
}

func orBytes(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

func mountTmpfs(dir string, size int64, mode os.FileMode) error {
	opts := fmt.Sprintf("size=%d,mode=%o", size, mode)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// under says whether path is dir or lies below it.
func under(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// readOnlyOutside makes every mount read-only except the writable
// directories, which are first bound onto themselves (with what is
// mounted below them) so that they stay writable mounts of their own,
// and the box's /proc and /dev/shm. It fails only when / itself stays
// writable.
func readOnlyOutside(writable []string, tmpDir string) error {
	for _, w := range writable {
		if w == "/" {
			// Everything is the workspace: nothing to make read-only.
			return nil
		}
	}
	for _, w := range writable {
		if w == tmpDir {
			continue // a tmpfs of its own already
		}
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", w, err)
		}
	}
	points, err := mountPoints()
	if err != nil {
		return err
	}
	var failed []string
	for _, p := range points {
		if p == "/proc" || p == "/dev/shm" || slices.ContainsFunc(writable, func(w string) bool { return under(p, w) }) {
			continue
		}
		if err := remountReadOnly(p); err != nil {
			if p == "/" {
				return fmt.Errorf("remount / read-only: %w", err)
			}
			failed = append(failed, p)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("these stay writable: %s", strings.Join(failed, ", "))
	}
	return nil
}

// remountReadOnly adds the read-only flag to the mount at p, keeping the
// flags a user namespace may not clear (nosuid, nodev, noexec, atime).
func remountReadOnly(p string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms int64 }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&f.st != 0 {
			flags |= uintptr(f.ms)
		}
	}
	return unix.Mount("", p, "", flags, "")
}

// mountPoints lists the mount points of this mount namespace, once each,
// parents first.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMount(fields[4])
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hide puts an empty read-only tmpfs on each hidden directory and
// /dev/null on each hidden file, and returns how many were present. A
// hidden path holding a writable directory cannot be hidden without
// hiding the workspace: that is an error, as is any mount that fails;
// but for private, the process's own directory, which stays visible
// through the cover (uncover).
func hide(hidden, writable []string, private string) (int, error) {
	for _, h := range hidden {
		if private != "" && under(h, private) {
			return 0, fmt.Errorf("the private directory %s holds %s, which bridle hides: give it a directory of its own", private, h)
		}
		for _, w := range writable {
			if under(w, h) && w != private {
				return 0, fmt.Errorf("the workspace %s lies inside %s, which bridle hides from commands: open a directory outside it", w, h)
			}
		}
	}
	if err := pinAncestors(hidden, writable); err != nil {
		return 0, err
	}
	// The private directory is held open before the covers go on: it is
	// bound back through this handle.
	keep := -1
	if private != "" && slices.ContainsFunc(hidden, func(h string) bool { return under(private, h) }) {
		fd, err := unix.Open(private, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, fmt.Errorf("open the private directory %s: %w", private, err)
		}
		defer unix.Close(fd)
		keep = fd
	}
	// Outer paths first: an inner one is then covered, or uncovered,
	// inside its parent's cover.
	hidden = slices.Clone(hidden)
	slices.SortStableFunc(hidden, func(a, b string) int { return len(a) - len(b) })
	n := 0
	for _, h := range hidden {
		fi, err := os.Stat(h)
		if err != nil {
			continue // nothing there to read
		}
		switch {
		case fi.IsDir() && keep >= 0 && under(private, h):
			err = uncover(h, private, keep)
		case fi.IsDir():
			err = unix.Mount("tmpfs", h, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
		default:
			if err = unix.Mount("/dev/null", h, "", unix.MS_BIND, ""); err == nil {
				err = remountReadOnly(h)
			}
		}
		if err != nil {
			return n, fmt.Errorf("hide %s from the command: %w", h, err)
		}
		n++
	}
	return n, nil
}

// uncover covers the hidden directory h with an empty tmpfs that holds
// only the way down to private, bound there from keep (a handle on it
// taken before the cover), and then makes the cover read-only: the
// process sees its own directory and nothing else of h.
func uncover(h, private string, keep int) error {
	if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return err
	}
	if err := os.MkdirAll(private, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", keep), private, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind the private directory back: %w", err)
	}
	return remountReadOnly(h)
}

// pinAncestors makes each directory between a writable directory and a
// hidden path inside it a mount point of its own (bound onto itself, with
// what is mounted below), because a mount point cannot be renamed (EBUSY):
// with the workspace at $HOME, `mv .config .config2` would otherwise move
// bridle's settings out from under their cover, and a command could then
// create ~/.config/bridle/settings.json of its own. Parents are bound
// before their children, all before the covers go on.
func pinAncestors(hidden, writable []string) error {
	var dirs []string
	for _, h := range hidden {
		for _, w := range writable {
			if w == "/" || !strings.HasPrefix(h, w+"/") {
				continue
			}
			rel := strings.Split(strings.TrimPrefix(filepath.Dir(h), w), "/")
			d := w
			for _, part := range rel {
				if part == "" {
					continue
				}
				d = filepath.Join(d, part)
				dirs = append(dirs, d)
			}
		}
	}
	slices.Sort(dirs) // a parent sorts before its children
	for _, d := range slices.Compact(dirs) {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			continue // nothing there yet: nothing to move aside
		}
		if err := unix.Mount(d, d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("pin %s, above a hidden path: %w", d, err)
		}
	}
	return nil
}
