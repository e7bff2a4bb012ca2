package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/tools"
)

// A command can change any file of the workspace, and which ones is not
// known until it runs. Where the box can watch (box.Writes), it says
// which file a command is about to change before the change happens:
// a Recorder then keeps what that file holds among the checkpoints (once
// per file and command), and when the command is done compares each such
// file with what it holds then. Its cost follows what the command
// changes, not the size of the workspace: nothing is scanned, and nothing
// is copied ahead. What it records is what the scans record (Scanner):
// the files a walk of the workspace finds (not .git, nothing .gitignore
// ignores, no hidden path, regular files only).

// Recorder records what one command changes.
type Recorder struct {
	store *Store
	root  *confine.Root

	mu    sync.Mutex
	find  *confine.Finder
	files map[string]*before // nil: not a regular file, nothing to record
	order []string
	// unknown are the box's words for the first calls it could not
	// follow (shownUnknown, each cut to unknownText bytes); moreUnknown
	// counts the rest. A command can make such calls as fast as it likes.
	unknown     []string
	moreUnknown int
	// max and maxPaths bound the files and the bytes of their paths
	// (MaxCommandFiles, MaxCommandPaths); paths is the latter so far, and
	// overflow says a bound was reached.
	max, maxPaths int
	paths         int
	overflow      bool
	// left is what the record may still read of the files the command
	// changes, the session's checkpoints' bound at first (Store.Bytes):
	// more would be pruned from them anyway, and reading it takes time the
	// command's timeout does not see. pastLeft counts the files not kept
	// for want of it.
	left     int64
	pastLeft int
	// unread counts the files Finish did not read, for want of left or
	// of time (stopped says why).
	unread, unreadPastLeft int
	stopped                error
}

const (
	// MaxCommandFiles and MaxCommandPaths bound the files one command's
	// record holds and the bytes of their paths (a path may be 4 KiB), and
	// so the memory it takes: about 100 MB at most. A rewind says the rest
	// were not recorded.
	MaxCommandFiles = 200_000
	MaxCommandPaths = 32 << 20
	// shownUnknown is how many of the calls the box could not follow a
	// record names, each in at most unknownText bytes.
	shownUnknown = 3
	unknownText  = 200
)

// before is a file as it was just before the command first changed it.
type before struct {
	exists bool
	stamp  confine.Stamp
	// hash is the content's, kept among the checkpoints; event.NotKept
	// when it could not be (why says so).
	hash string
	why  string
}

// Recorder returns a recorder of one command's changes to the workspace
// root, which keeps what they replace among s.
func (s *Store) Recorder(root *confine.Root) *Recorder {
	return &Recorder{store: s, root: root, find: root.Finder(), files: map[string]*before{},
		max: MaxCommandFiles, maxPaths: MaxCommandPaths, left: s.Bytes()}
}

// Changing is told, before the command changes path, which path; the
// command waits meanwhile (box.Writes). Once ctx ends (the command was
// stopped), what files held is no longer kept.
func (r *Recorder) Changing(ctx context.Context, c box.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case c.Unknown != "":
		r.unknownCall(c.Unknown)
	case c.To == "" && c.Path != "":
		r.touch(ctx, c.Path)
	default:
		r.rename(ctx, c.Path, c.To)
		if c.Exchange {
			r.rename(ctx, c.To, c.Path)
		}
	}
}

// rename records a rename of from to to: the file, or every file below
// the directory, leaves from and arrives at to.
func (r *Recorder) rename(ctx context.Context, from, to string) {
	if from == "" {
		r.touch(ctx, to)
		return
	}
	fi, err := r.root.Lstat(from)
	if err != nil || !fi.IsDir() {
		r.touch(ctx, from)
		r.touch(ctx, to)
		return
	}
	tree, err := r.root.OpenTree(from)
	if err != nil {
		return
	}
	defer tree.Close()
	err = tree.Walk(ctx, func(f confine.File) error {
		if r.overflow {
			return errFull // the rest would not be recorded: not walked
		}
		rel := filepath.FromSlash(f.Rel)
		r.touch(ctx, filepath.Join(from, rel))
		if to != "" {
			r.touch(ctx, filepath.Join(to, rel))
		}
		return nil
	})
	switch {
	case err == nil, errors.Is(err, errFull):
	case ctx.Err() != nil:
		r.unknownCall(fmt.Sprintf("%s (a directory renamed: the command was stopped before bridle had read it)", from))
	default:
		r.unknownCall(fmt.Sprintf("%s (the directory could not be read: %v)", from, err))
	}
}

// pastLeftWhy says why a file was not read: the record read all it may.
func (r *Recorder) pastLeftWhy() string {
	return fmt.Sprintf("the command changed more than this session's checkpoints hold (%s)", sizeText(r.store.o.Bytes))
}

func filesText(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

// errFull stops a walk once the record holds all it may.
var errFull = errors.New("the command's record is full")

// unknownCall notes a call the box could not follow: its words for the
// first few, a count of the rest.
func (r *Recorder) unknownCall(why string) {
	if len(r.unknown) >= shownUnknown {
		r.moreUnknown++
		return
	}
	r.unknown = append(r.unknown, shorten(why, unknownText))
}

// shorten cuts s to about n bytes, keeping its start and its end (where
// the box says why), not splitting a character.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*2/3, len(s)-n/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + "…" + s[tail:]
}

// touch keeps what path holds, the first time the command changes it.
func (r *Recorder) touch(ctx context.Context, path string) {
	if path == "" {
		return
	}
	if _, seen := r.files[path]; seen {
		return
	}
	if !r.find.Finds(path, false) {
		return // not remembered: a build's ignored outputs would fill memory
	}
	if len(r.files) >= r.max || r.paths+len(path) > r.maxPaths {
		r.overflow = true
		return
	}
	r.paths += len(path)
	if filepath.Base(path) == ".gitignore" {
		defer r.find.Forget() // the rules change once the command writes it
	}
	r.order = append(r.order, path)
	fi, err := r.root.Lstat(path)
	switch {
	case err != nil && notExist(err):
		r.files[path] = &before{}
		return
	case err != nil:
		r.files[path] = &before{exists: true, hash: event.NotKept, why: err.Error()}
		return
	case !fi.Mode().IsRegular():
		r.files[path] = nil // a link, a directory, a pipe: not a file a walk finds
		return
	}
	st, _ := confine.StampOf(fi)
	b := &before{exists: true, stamp: st}
	r.files[path] = b
	switch {
	case st.Size > r.store.o.Bytes && st.Size <= MaxFile:
		b.hash, b.why = event.NotKept, fmt.Sprintf("larger than the session's checkpoints may hold (%s)", sizeText(r.store.o.Bytes))
		return
	case ctx.Err() != nil:
		b.hash, b.why = event.NotKept, "the command was stopped (its timeout, or a cancel) before bridle kept it"
		return
	case st.Size > r.left && st.Size <= MaxFile:
		r.pastLeft++
		b.hash, b.why = event.NotKept, r.pastLeftWhy()
		return
	}
	data, why := r.read(path, st)
	if why != "" {
		b.hash, b.why = event.NotKept, why
		return
	}
	r.left -= int64(len(data))
	if b.hash, err = r.store.Keep(data); err != nil {
		r.store.o.Logger.Warn("no checkpoint before a command", "session", r.store.o.Session, "path", path, "err", err)
		b.hash, b.why = event.NotKept, err.Error()
	}
}

// read reads a file as the scans read it: not one over MaxFile, nor one
// with other hard links; it returns why when it does not.
func (r *Recorder) read(path string, st confine.Stamp) ([]byte, string) {
	switch {
	case st.Size > MaxFile:
		return nil, fmt.Sprintf("larger than %d MiB", MaxFile>>20)
	case st.Links > 1:
		return nil, "it has other hard links"
	}
	f, _, err := r.root.Open(path)
	if err != nil {
		if errors.Is(err, confine.ErrLinked) {
			return nil, "it has other hard links"
		}
		return nil, err.Error()
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	switch {
	case err != nil:
		return nil, err.Error()
	case len(data) > MaxFile:
		return nil, fmt.Sprintf("larger than %d MiB", MaxFile>>20)
	}
	return data, ""
}

func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "does not exist")
}

// Finish is called once the command is done: it returns what the
// command changed, and why that may be incomplete ("" when it is not).
// unwatched is the box's word when it could not watch the command. It
// reads what each changed file holds now, until ctx ends (the turn is
// cancelled), for at most the scans' time (scanTimeout), and no more than
// what the record may still read: a file it does not read is recorded as
// changed to what bridle does not know (a rewind asks before putting it
// back).
func (r *Recorder) Finish(ctx context.Context, unwatched string) ([]event.FileChange, string) {
	ctx, cancel := context.WithTimeout(ctx, scanTimeout)
	defer cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	var changes []event.FileChange
	for _, p := range r.order {
		b := r.files[p]
		if b == nil {
			continue
		}
		after, changed := r.after(ctx, p, b)
		if !changed {
			continue
		}
		c := event.FileChange{Path: p, After: after}
		if b.exists {
			c.Before, c.Mode, c.Why = b.hash, b.stamp.Mode, b.why
		}
		changes = append(changes, c)
	}
	slices.SortFunc(changes, func(a, b event.FileChange) int { return strings.Compare(a.Path, b.Path) })
	return changes, r.why(unwatched)
}

// after is what p holds now ("" when it is gone, NotKept when it cannot
// be read, or is not, past ctx or what the record may read), and whether
// that is a change from b.
func (r *Recorder) after(ctx context.Context, p string, b *before) (string, bool) {
	fi, err := r.root.Lstat(p)
	switch {
	case err != nil && notExist(err), err == nil && !fi.Mode().IsRegular():
		return "", b.exists // gone, or no longer a file a walk finds
	case err != nil:
		return "", false // cannot tell; not claimed
	}
	st, _ := confine.StampOf(fi)
	if b.exists && st.Same(b.stamp) {
		return "", false
	}
	if st.Size <= MaxFile && st.Links <= 1 { // else read reads nothing
		switch {
		case ctx.Err() != nil:
			r.unread, r.stopped = r.unread+1, ctx.Err()
			return event.NotKept, true
		case st.Size > r.left:
			r.unreadPastLeft++
			return event.NotKept, true
		}
	}
	data, why := r.read(p, st)
	r.left -= int64(len(data))
	if why != "" {
		return event.NotKept, true
	}
	hash := tools.Hash(data)
	return hash, !b.exists || hash != b.hash
}

// why says what the recording may lack: the calls the box could not
// follow, the files past the bound, or why it could not watch at all.
func (r *Recorder) why(unwatched string) string {
	if unwatched != "" {
		return "the box could not watch what the command changed: " + unwatched
	}
	var parts []string
	if r.overflow {
		parts = append(parts, fmt.Sprintf("the command changed more files than one command's record holds (%d, or %s of paths); those past them are not recorded",
			r.max, sizeText(int64(r.maxPaths))))
	}
	if r.unread > 0 {
		stopped := "the turn was cancelled before bridle had read them"
		if errors.Is(r.stopped, context.DeadlineExceeded) {
			stopped = fmt.Sprintf("reading them took more than %v", scanTimeout)
		}
		parts = append(parts, fmt.Sprintf("bridle did not read %s after the command (%s), so a rewind asks before putting them back", filesText(r.unread), stopped))
	}
	if r.unreadPastLeft > 0 {
		parts = append(parts, fmt.Sprintf("bridle did not read %s after the command (%s), so a rewind asks before putting them back", filesText(r.unreadPastLeft), r.pastLeftWhy()))
	}
	if r.pastLeft > 0 {
		parts = append(parts, fmt.Sprintf("%s: what %s held before is not kept", r.pastLeftWhy(), filesText(r.pastLeft)))
	}
	if len(r.unknown) > 0 {
		more := ""
		if r.moreUnknown > 0 {
			more = fmt.Sprintf(" and %d more", r.moreUnknown)
		}
		parts = append(parts, "bridle could not tell which files some of the command's calls changed: "+strings.Join(r.unknown, "; ")+more)
	}
	return strings.Join(parts, "; ")
}
