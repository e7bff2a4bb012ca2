// Package fslock keeps the editor's file calls and the box's commands
// apart. The editor is handed a path bridle checked and opens it itself,
// following whatever links it meets: a command running meanwhile, in any
// session of any bridle process, could swap the file for a link to a file
// outside the workspace between the check and the editor's open. So an
// editor call runs only while no command that could change what its path
// leads to is running, and no such command starts until it is done.
//
// Both sides announce themselves in one lock file, shared by the user's
// bridle processes (it lives in bridle's cache directory, which commands
// cannot see), as shared byte-range locks on open file descriptions, one
// byte per directory and side:
//
//   - a command announces each directory it may write (the workspace's
//     directories), then waits until no editor call is announced on any
//     of them;
//   - an editor call announces every directory a lookup of its path goes
//     through and all their ancestors, then checks that no command is
//     announced on any of them; if one is, it withdraws, and either gives
//     up (a read, which then reads the disk through the confined file) or
//     tries again later (an edit).
//
// A command that runs in the background (a server, a watcher: it may run
// for hours) announces itself in a second file too, on the same bytes,
// before the first and until after it: an editor call that finds a
// command in its way and one of those among them knows at once that
// waiting is futile (ErrBackground), and its caller goes another way (an
// edit is then written on disk, through the confined root, as without
// the editor's buffers).
//
// A command can change a lookup only in a directory below one it may
// write, so a command and an editor call that could race always share a
// byte. Each side announces before it checks the other, so of two that
// start together at least one sees the other; the editor call is the one
// that withdraws, so neither waits for the other forever. Directories are
// named by device and inode, not by path: a directory renamed while a
// command runs in it is still the one the command writes.
package fslock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bridle-dev/bridle/internal/fileid"
)

// ErrBusy is returned by Editor without waiting when a command that could
// change what the path leads to is running.
var ErrBusy = errors.New("a command that can write there is running (in this or another session, or another bridle window)")

// ErrBackground is returned by Editor without waiting, wait or not, when
// a command that runs in the background (Background) could change what
// the path leads to: it may run for hours, and waiting for it is futile.
// It is ErrBusy too.
var ErrBackground error = backgroundBusy{}

type backgroundBusy struct{}

func (backgroundBusy) Error() string {
	return "a command running in the background (in this or another session, or another bridle window) can write there"
}

func (backgroundBusy) Is(target error) bool { return target == ErrBusy }

// errMoving is returned by Editor without waiting when the directories
// on the way to the path keep changing while it announces itself (only
// something outside the box, the user's own programs, can do that).
var errMoving = errors.New("the directories on its way kept changing")

// maxMoves bounds the announcements Editor makes without waiting while
// the path moves.
const maxMoves = 8

// Locks are the announcements of the user's bridle processes, in one
// file. A nil *Locks announces nothing: every call returns at once.
type Locks struct {
	path string
	// background is the file of the commands that run in the background
	// (path with ".background" added).
	background string
}

// Open returns the Locks kept in the file at path (and path.background),
// creating it, and checks that this system can take the locks. Every
// bridle process of the user must use the same file.
func Open(path string) (*Locks, error) {
	l := &Locks{path: path, background: path + ".background"}
	for _, p := range []string{l.path, l.background} {
		f, err := openFile(p)
		if err != nil {
			return nil, err
		}
		err = probe(f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

func openFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("bridle's lock file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("bridle's lock file: %w", err)
	}
	return f, nil
}

// The two sides' bytes of a directory's key.
const (
	commandSide = 0
	editorSide  = 1
)

// offset is where a key's byte of one side is in the lock file.
func offset(key uint64, side int64) int64 { return int64(key>>2)<<1 | side }

// Command announces a command that may write below dirs, waiting until no
// editor call is announced on any of them (ctx ends the wait); waiting,
// if not nil, is called once when it starts to wait. The command's
// processes must all be gone before release is called.
func (l *Locks) Command(ctx context.Context, dirs []string, waiting func()) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	return l.command(ctx, dirKeys(dirs), waiting)
}

// Background announces a command that runs in the background as Command
// does, and as one that may run for hours: an editor call in its way
// fails at once (ErrBackground) instead of waiting for it to end.
func (l *Locks) Background(ctx context.Context, dirs []string, waiting func()) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	keys := dirKeys(dirs)
	// Before the command's announcement and until after it: an editor
	// call that sees the command sees this.
	bg, err := l.announce(l.background, keys, commandSide)
	if err != nil {
		return nil, err
	}
	end, err := l.command(ctx, keys, waiting)
	if err != nil {
		bg.Close()
		return nil, err
	}
	return func() {
		end()
		bg.Close()
	}, nil
}

func dirKeys(dirs []string) []uint64 {
	var keys []uint64
	for _, d := range dirs {
		if k, ok := dirKey(d); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

func (l *Locks) command(ctx context.Context, keys []uint64, waiting func()) (release func(), err error) {
	f, err := l.announce(l.path, keys, commandSide)
	if err != nil {
		return nil, err
	}
	// Editor calls are short (each question to the editor has a time
	// bound), and every one that starts from now on sees this command and
	// withdraws: the wait ends.
	for try := 0; ; try++ {
		busy, err := anyHeld(f, keys, editorSide)
		if err != nil {
			f.Close()
			return nil, err
		}
		if !busy {
			return func() { f.Close() }, nil
		}
		if try == 0 && waiting != nil {
			waiting()
		}
		if err := pause(ctx, try); err != nil {
			f.Close()
			return nil, fmt.Errorf("waiting for the editor to answer about a file there: %w", err)
		}
	}
}

// Editor announces an editor call on path (absolute, as the editor will
// be given it). Without wait it returns ErrBusy at once when a command
// that could change what path leads to is running; with wait it waits for
// such commands to end (ctx ends the wait). Either way it returns
// ErrBackground at once when one of them runs in the background. Call
// release once the editor has answered.
func (l *Locks) Editor(ctx context.Context, path string, wait bool) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	for try := 0; ; try++ {
		keys := pathKeys(path)
		f, err := l.announce(l.path, keys, editorSide)
		if err != nil {
			return nil, err
		}
		busy, err := anyHeld(f, keys, commandSide)
		if err != nil {
			f.Close()
			return nil, err
		}
		// A command that ended just before the announcement may have
		// moved the path elsewhere; once announced, no command can.
		if !busy && isSubset(pathKeys(path), keys) {
			return func() { f.Close() }, nil
		}
		f.Close()
		if busy {
			if bg, err := l.inBackground(keys); err != nil || bg {
				if err == nil {
					err = ErrBackground
				}
				return nil, err
			}
		}
		switch {
		case wait:
		case busy:
			return nil, ErrBusy
		case try >= maxMoves:
			return nil, errMoving
		}
		if err := pause(ctx, try); err != nil {
			return nil, fmt.Errorf("waiting for a command that can write there to end: %w", err)
		}
	}
}

// inBackground says whether a command that runs in the background is
// announced on any of keys.
func (l *Locks) inBackground(keys []uint64) (bool, error) {
	f, err := openFile(l.background)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return anyHeld(f, keys, commandSide)
}

// announce opens a description of the lock file at path of its own
// (locks belong to it, so two callers in one process do not share them)
// and takes a shared lock on each key's byte of side. Nothing takes an
// exclusive lock, so this never waits.
func (l *Locks) announce(path string, keys []uint64, side int64) (*os.File, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if err := share(f, offset(k, side)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// anyHeld says whether another description holds a lock on any key's
// byte of side.
func anyHeld(f *os.File, keys []uint64, side int64) (bool, error) {
	for _, k := range keys {
		held, err := heldByOther(f, offset(k, side))
		if err != nil || held {
			return held, err
		}
	}
	return false, nil
}

// pause waits before try+1, from a few milliseconds growing to a quarter
// of a second, with jitter so that waiters do not move in step.
func pause(ctx context.Context, try int) error {
	d := min(5*time.Millisecond<<min(try, 6), 250*time.Millisecond)
	d += rand.N(d / 2)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pathKeys are the keys of every directory a lookup of path goes through
// and of all their ancestors, sorted.
func pathKeys(path string) []uint64 {
	seen := map[string]bool{}
	var keys []uint64
	for _, d := range lookupDirs(path) {
		for a := d; !seen[a]; a = filepath.Dir(a) {
			seen[a] = true
			if k, ok := dirKey(a); ok {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// lookupDirs returns the directories, as real paths, in which opening
// path (absolute) looks up a name, following symbolic links as open(2)
// does. A name that does not exist ends the walk.
func lookupDirs(path string) []string {
	var dirs []string
	cur, rest := "/", path
	for hops := 0; ; {
		var name string
		name, rest, _ = strings.Cut(strings.TrimLeft(rest, "/"), "/")
		switch name {
		case "":
			if rest == "" {
				return dirs
			}
			continue
		case ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		dirs = append(dirs, cur)
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return dirs
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(next)
		if hops++; err != nil || hops > 40 {
			return dirs
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = target + "/" + rest
	}
}

// dirKey names a directory by its device and inode.
func dirKey(dir string) (uint64, bool) {
	id, ok := fileid.Stat(dir)
	if !ok {
		return 0, false
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], id.Dev)
	binary.LittleEndian.PutUint64(b[8:], id.Ino)
	h := fnv.New64a()
	h.Write(b[:])
	return h.Sum64(), true
}

func isSubset(a, b []uint64) bool {
	for _, k := range a {
		if _, ok := slices.BinarySearch(b, k); !ok {
			return false
		}
	}
	return true
}
