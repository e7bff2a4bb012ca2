package confine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bridle-dev/bridle/workspace"
)

// fastTree walks with directory file descriptors: each directory is
// opened, and each file read, with openat2 from the descriptor of the
// directory holding it, confined beneath it (RESOLVE_BENEATH, no symbolic
// links): the kernel enforces the confinement in one call per file, a few
// times fewer system calls than os.Root's walk per path element, and what
// is read is in the very directory the walk listed and checked.
type fastTree struct {
	top    *os.File
	prefix string
	ig     *workspace.Ignore
	hide   *walkGuard // nil: nothing hidden
	// buf holds one directory's entries at a time: a walk lists a
	// directory whole before it goes into the next.
	buf []byte
}

const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openFastTree takes top (the tree's top directory, checked) if openat2
// works here (Linux 5.6+); otherwise the caller keeps it.
func openFastTree(top *os.File, prefix string, ig *workspace.Ignore, hide *walkGuard) (Tree, bool) {
	fd, err := openat2(int(top.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, false
	}
	unix.Close(fd)
	return &fastTree{top: top, prefix: prefix, ig: ig, hide: hide}, true
}

func (t *fastTree) Close() { t.top.Close() }

func openat2(dir int, name string, flags uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dir, name, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: beneath})
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

// openDir opens the directory name in dir for walking; hidden is true
// (and nothing open) when it is a hidden directory.
func (t *fastTree) openDir(dir int, name string) (d *dirFD, hidden bool, err error) {
	fd, err := openat2(dir, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, false, err
	}
	var dev uint64
	if t.hide != nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, false, err
		}
		if t.hide.skipID(fileID{Dev: uint64(st.Dev), Ino: st.Ino}) {
			unix.Close(fd)
			return nil, true, nil
		}
		dev = uint64(st.Dev)
	}
	return newDirFD(fd, dev), false, nil
}

func (t *fastTree) Walk(ctx context.Context, fn func(f File) error) error {
	return t.WalkDirs(ctx, nil, fn)
}

func (t *fastTree) WalkDirs(ctx context.Context, dir func(rel string) error, fn func(f File) error) error {
	d, hidden, err := t.openDir(int(t.top.Fd()), ".")
	if err != nil {
		return err
	}
	if hidden {
		return nil // checked when the tree was opened; renamed since
	}
	defer d.release()
	err = t.walkDir(ctx, d, ".", t.ig, dir, fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func (t *fastTree) walkDir(ctx context.Context, dir *dirFD, rel string, ig *workspace.Ignore, onDir func(string) error, fn func(File) error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	type entry struct {
		name string
		ino  uint64
		typ  uint8
	}
	var ents []entry
	hasIgnore := false
	if t.buf == nil {
		t.buf = make([]byte, 32<<10)
	}
	buf := t.buf
	for {
		n, err := unix.Getdents(dir.fd, buf)
		if err != nil || n <= 0 {
			break
		}
		for off := 0; off < n; {
			// struct linux_dirent64 { u64 ino; s64 off; u16 reclen; u8 type; char name[]; }
			ino := *(*uint64)(unsafe.Pointer(&buf[off]))
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
			typ := buf[off+18]
			nameb := buf[off+19 : off+reclen]
			for i, c := range nameb {
				if c == 0 {
					nameb = nameb[:i]
					break
				}
			}
			name := string(nameb)
			off += reclen
			if name == "." || name == ".." {
				continue
			}
			if name == ".gitignore" {
				hasIgnore = true
			}
			ents = append(ents, entry{name, ino, typ})
		}
	}
	full := func(p string) string { return path.Join(t.prefix, p) }
	if hasIgnore && rel != "." {
		if data, err := t.readAt(dir.fd, ".gitignore", 1<<20); err == nil {
			ig = ig.With(full(rel), data)
		}
	}
	for _, e := range ents {
		p := e.name
		if rel != "." {
			p = rel + "/" + e.name
		}
		if t.hide.skipPath(p) {
			continue
		}
		typ := e.typ
		if typ == unix.DT_UNKNOWN {
			var st unix.Stat_t
			if unix.Fstatat(dir.fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				typ = unix.DT_DIR
			case unix.S_IFREG:
				typ = unix.DT_REG
			}
		}
		switch typ {
		case unix.DT_DIR:
			if e.name == ".git" || ig.Match(full(p), true) {
				continue
			}
			sub, hidden, err := t.openDir(dir.fd, e.name)
			if err != nil || hidden {
				continue // unreadable directories are skipped, hidden ones unseen
			}
			if onDir != nil {
				if err := onDir(p); err != nil {
					sub.release()
					return err
				}
			}
			err = t.walkDir(ctx, sub, p, ig, onDir, fn)
			sub.release()
			if err != nil {
				return err
			}
		case unix.DT_REG:
			if ig.Match(full(p), false) || t.hide.skipID(fileID{Dev: dir.dev, Ino: e.ino}) {
				continue
			}
			if err := fn(File{Rel: p, dir: dir, name: e.name}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *fastTree) Stat(f File) (Stamp, error) {
	if f.dir == nil {
		return Stamp{}, errors.New("not a file of this walk")
	}
	var st unix.Statx_t
	if err := unix.Statx(f.dir.fd, f.name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &st); err != nil {
		return Stamp{}, err
	}
	ns := func(t unix.StatxTimestamp) int64 { return t.Sec*1e9 + int64(t.Nsec) }
	s := Stamp{Size: int64(st.Size), Mod: ns(st.Mtime), Change: ns(st.Ctime), Ino: st.Ino, Links: uint64(st.Nlink), Mode: uint32(st.Mode) & 0o777}
	if st.Mask&unix.STATX_BTIME != 0 {
		s.Birth = ns(st.Btime)
	}
	return s, nil
}

func (t *fastTree) Read(f File, max int64) ([]byte, error) {
	if f.dir == nil {
		return nil, errors.New("not a file of this walk")
	}
	return t.readAt(f.dir.fd, f.name, max)
}

// readAt reads the regular file name in the directory dir.
func (t *fastTree) readAt(dir int, name string, max int64) ([]byte, error) {
	// O_NONBLOCK: a file swapped for a named pipe must not block the open.
	fd, err := openat2(dir, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	if t.hide.skipID(fileID{Dev: uint64(st.Dev), Ino: st.Ino}) {
		return nil, ErrHidden
	}
	if st.Nlink > 1 {
		return nil, ErrLinked
	}
	if st.Size > max {
		return nil, ErrTooLarge
	}
	// One read for the common case; loop for files that grew or short
	// reads.
	data := make([]byte, 0, st.Size+1)
	for {
		n, err := unix.Read(fd, data[len(data):cap(data)])
		if n > 0 {
			data = data[:len(data)+n]
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 || int64(len(data)) == st.Size && len(data) < cap(data) && n > 0 && st.Size > 0 {
			// Read to the size fstat gave: done, without another read
			// for the end of the file (system calls are the cost here).
			return data, nil
		}
		if len(data) == cap(data) {
			if int64(len(data)) > max {
				return nil, ErrTooLarge
			}
			data = append(data, 0)[:len(data)]
		}
	}
}

func closeFD(fd int) { unix.Close(fd) }
