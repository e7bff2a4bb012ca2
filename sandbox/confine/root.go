package confine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bridle-dev/bridle/internal/fileid"
	"github.com/bridle-dev/bridle/workspace"
)

// Root confines file access to the workspace: the session's directory and
// the editor's additional directories. It is built on os.Root, so "..",
// absolute paths and symlinks cannot lead outside it, even when a link is
// swapped in between a check and a use.
type Root struct {
	dirs []dirRoot // dirs[0] is the session's directory
	// hidden are absolute paths inside or outside the workspace that no
	// tool may read or write (bridle's own files, credential stores); the
	// box hides them from commands too. marks holds the same paths with
	// what the file tools check them by (guard).
	hidden []string
	marks  []hiddenPath
}

type dirRoot struct {
	dir  string
	root *os.Root
	// id is the directory root stands for, which dir led to when it was
	// opened. A command can rename the directory and put something else
	// (a link to ~/.config/bridle) under its name: root still stands for
	// the directory, but dir, which commands and the editor are given,
	// then leads elsewhere (see named).
	id fileID
}

// OpenRoot opens dir, and any additional directories, as the workspace.
// Every directory must be absolute and exist.
func OpenRoot(dir string, additional ...string) (*Root, error) {
	r := &Root{}
	for _, d := range append([]string{dir}, additional...) {
		if !filepath.IsAbs(d) {
			r.Close()
			return nil, fmt.Errorf("workspace %q is not an absolute path", d)
		}
		d = filepath.Clean(d)
		or, err := os.OpenRoot(d)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("open workspace %s: %w", d, err)
		}
		var id fileID
		fi, err := or.Stat(".")
		if err == nil {
			id, err = rootID(or, fi)
		}
		r.dirs = append(r.dirs, dirRoot{dir: d, root: or, id: id})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("open workspace %s: %w", d, err)
		}
	}
	return r, nil
}

// rootID is the identity of the directory root stands for, whose Stat is
// fi: from fi where it carries it (Unix), else from a handle (Windows).
func rootID(root *os.Root, fi fs.FileInfo) (fileID, error) {
	if id, ok := fileid.FromInfo(fi); ok {
		return id, nil
	}
	top, err := root.Open(".")
	if err != nil {
		return fileID{}, err
	}
	defer top.Close()
	id, _ := fileid.Of(top)
	return id, nil
}

// Hide adds paths no tool may read or write, and commands do not see
// (HiddenPaths makes the list). Call it before the Root is used.
func (r *Root) Hide(paths ...string) { r.hide(hiddenListed, paths) }

// HideOwn adds bridle's own files (its settings, database, artifacts,
// cache) to the hidden paths: the same as Hide, and the refusals say
// that no setting can make them visible.
func (r *Root) HideOwn(paths ...string) { r.hide(hiddenOwn, paths) }

func (r *Root) hide(why hiddenWhy, paths []string) {
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		w := why
		if w == hiddenListed && isCredentialStore(p) {
			w = hiddenCredential
		}
		if i := slices.IndexFunc(r.marks, func(h hiddenPath) bool { return h.path == p }); i >= 0 {
			r.marks[i].why = max(r.marks[i].why, w)
			continue
		}
		h := hiddenPath{path: p, why: w}
		if real := resolveExisting(p); real != p {
			h.real = real
		}
		h.id, h.hasID = statID(p)
		r.marks = append(r.marks, h)
		r.hidden = append(r.hidden, p)
	}
}

// Hidden returns the paths Hide and HideOwn added.
func (r *Root) Hidden() []string { return r.hidden }

// Dir returns the session's directory, where relative paths start.
func (r *Root) Dir() string { return r.dirs[0].dir }

// Dirs returns every directory of the workspace, the session's first.
func (r *Root) Dirs() []string {
	out := make([]string, len(r.dirs))
	for i, d := range r.dirs {
		out[i] = d.dir
	}
	return out
}

// Close releases the directory handles.
func (r *Root) Close() error {
	var errs []error
	for _, d := range r.dirs {
		errs = append(errs, d.root.Close())
	}
	return errors.Join(errs...)
}

// Where names the workspace in an error message.
func (r *Root) Where() string {
	if len(r.dirs) == 1 {
		return "the workspace " + r.dirs[0].dir
	}
	return "the workspace (" + strings.Join(r.Dirs(), ", ") + ")"
}

// ErrMoved is what every refusal is when a workspace directory's name no
// longer leads to the directory the session opened (errors.Is).
var ErrMoved = errors.New("the workspace directory was moved or replaced")

type movedError struct{ dir string }

func (e *movedError) Error() string {
	return fmt.Sprintf("the workspace directory %s was moved or replaced after the session opened: its name now leads to another directory, or to none. "+
		"The session's file tools, commands and questions to the editor are refused while it does (the editor and commands are given paths by name); "+
		"put the directory back under its name, or open a new session where it is now", e.dir)
}

func (e *movedError) Is(target error) bool { return target == ErrMoved }

// named checks that d's name still leads to the directory its os.Root
// stands for. The handle keeps the file tools in the directory the session
// opened whatever happens to its name; but the editor, and the box, are
// given absolute paths, which they look up by name.
func (d *dirRoot) named() error {
	if id, ok := statID(d.dir); !ok || id != d.id {
		return &movedError{d.dir}
	}
	return nil
}

// CheckDirs says whether the name of every directory of the workspace
// still leads to the directory the Root opened (ErrMoved if not): what
// a command, which runs in the directories by name, checks first.
func (r *Root) CheckDirs() error {
	for i := range r.dirs {
		if err := r.dirs[i].named(); err != nil {
			return err
		}
	}
	return nil
}

// resolve is lexical, for a path that is to be opened: it also refuses
// it when its workspace directory's name no longer leads to the
// directory (named), since a check of the path and what its absolute
// name leads to would then disagree.
func (r *Root) resolve(path string) (*dirRoot, string, error) {
	d, rel, err := r.lexical(path)
	if err != nil {
		return nil, "", err
	}
	if err := d.named(); err != nil {
		return nil, "", err
	}
	return d, rel, nil
}

// lexical finds the directory a path the model gave belongs to: relative
// paths start in the session's directory; absolute ones must lie inside
// one of the workspace's directories. It returns the path relative to
// that directory, as os.Root wants it.
func (r *Root) lexical(path string) (*dirRoot, string, error) {
	if path == "" {
		return nil, "", fmt.Errorf("empty path: give a path relative to %s", r.Where())
	}
	if strings.IndexByte(path, 0) >= 0 {
		return nil, "", fmt.Errorf("path %q contains a NUL byte", path)
	}
	if !filepath.IsAbs(path) {
		return &r.dirs[0], filepath.Clean(path), nil
	}
	clean := filepath.Clean(path)
	for i := range r.dirs {
		rel, err := filepath.Rel(r.dirs[i].dir, clean)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return &r.dirs[i], rel, nil
		}
	}
	return nil, "", fmt.Errorf("path %s is outside %s", path, r.Where())
}

// split returns the top of the workspace directory holding path (as an
// absolute directory) and path's slash path below it ("" at the top).
func (r *Root) split(path string) (top, sub string, err error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return "", "", err
	}
	if rel == "." {
		rel = ""
	}
	return d.dir, filepath.ToSlash(rel), nil
}

func (r *Root) notDir(path string) error {
	return fmt.Errorf("%s is not a directory in %s", path, r.Where())
}

// Abs returns the absolute path of a workspace path, lexically: for
// editor locations and messages, never for access.
func (r *Root) Abs(path string) string {
	d, rel, err := r.lexical(path)
	if err != nil {
		return path
	}
	return filepath.Join(d.dir, rel)
}

// EditorPath returns the absolute path the editor is to be asked about
// for path, whose file the caller opened through the Root (opened is what
// that file's Stat said), once it is sure the editor reaches that very
// file: the editor opens the path by name and follows links, the Root
// opened it through its directory handle. So the workspace directory's
// name must still lead to that directory, and the absolute path, by name,
// to the file opened (same device and inode). The caller holds the editor
// call's announcement (sandbox/fslock) from before the open until the
// editor has answered: no command can change either meanwhile.
func (r *Root) EditorPath(path string, opened fs.FileInfo) (string, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return "", err
	}
	abs := filepath.Join(d.dir, rel)
	fi, err := os.Stat(abs)
	if err != nil || !os.SameFile(fi, opened) {
		return "", fmt.Errorf("%s: its absolute path %s no longer leads to the file bridle checked (a link or a directory on its way was changed): the editor is not asked about it", path, abs)
	}
	return abs, nil
}

// NewFileEditorPath is EditorPath for a file that does not exist yet,
// which the editor is to create: the file's directory is made if missing
// (through the Root, one checked level at a time, as WriteFile makes it:
// an editor may not create directories), neither it nor the name is
// hidden, the name is still free there, and the directory's absolute
// path leads, by name, to the directory the Root opened. The caller holds
// the editor call's announcement, as for EditorPath. Without mkdirs a
// missing directory is not made: the error then wraps fs.ErrNotExist
// (asking the editor whether it holds a buffer there, for a file it was
// to create, changes nothing).
func (r *Root) NewFileEditorPath(path string, mkdirs bool) (string, error) {
	d, rel, g, err := r.entry(path)
	if err != nil {
		return "", err
	}
	base := filepath.Base(rel)
	if !mkdirs {
		if _, err := d.root.Stat(filepath.Dir(rel)); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: its directory: %w", path, err)
		} else if err != nil {
			return "", r.explain(path, d, err)
		}
	}
	dir, err := r.openParent(g, d, path, filepath.Dir(rel), base)
	if err != nil {
		return "", err
	}
	defer dir.Close()
	if _, err := dir.Lstat(base); err == nil {
		return "", fmt.Errorf("%s exists now: it was made after this write was planned", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", r.explain(path, d, err)
	}
	opened, err := dir.Stat(".")
	if err != nil {
		return "", r.explain(path, d, err)
	}
	abs := filepath.Join(d.dir, rel)
	fi, err := os.Stat(filepath.Dir(abs))
	if err != nil || !os.SameFile(fi, opened) {
		return "", fmt.Errorf("%s: its directory's absolute path %s no longer leads to the directory bridle checked (a link or a directory on its way was changed): the editor is not asked about it", path, filepath.Dir(abs))
	}
	return abs, nil
}

// Locate returns the absolute path of a workspace path for an editor to
// show (a tool call's location), and false when the editor must not be
// given it: outside the workspace, leading out through a symbolic link,
// or hidden. The tools refuse such paths, and an editor that follows a
// location opens the file itself. A path that does not exist yet is
// judged by the deepest directory above it that does.
func (r *Root) Locate(path string) (string, bool) { return r.locate(r.guard(), path) }

// A Locator is Locate for the many paths one replay of a session's
// history names: the hidden paths' guard is built once (a stat of each),
// and each path is checked once, its answer kept for the cards that name
// it again. It answers as Locate would have when it first checked the
// path, so it lives for one replay: a file that becomes a link out
// afterwards is checked again by the next. It is not safe for concurrent
// use.
type Locator struct {
	r    *Root
	g    *guard
	seen map[string]located
}

type located struct {
	abs string
	ok  bool
}

// Locator returns a Locator of r's paths as they are now.
func (r *Root) Locator() *Locator {
	return &Locator{r: r, g: r.guard(), seen: map[string]located{}}
}

// Locate is Root.Locate, answered once for each path.
func (l *Locator) Locate(path string) (string, bool) {
	if v, ok := l.seen[path]; ok {
		return v.abs, v.ok
	}
	abs, ok := l.r.locate(l.g, path)
	l.seen[path] = located{abs, ok}
	return abs, ok
}

// locate is Locate with the guard g.
func (r *Root) locate(g *guard, path string) (string, bool) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return "", false
	}
	abs := filepath.Join(d.dir, rel)
	if g.byPath(abs) != nil {
		return "", false
	}
	for p := rel; ; p = filepath.Dir(p) {
		f, err := workspace.OpenNoWait(d.root, p)
		if err == nil {
			fi, err := f.Stat()
			if err == nil {
				_, err = r.checkOpened(g, f, fi, path, filepath.Join(d.dir, p))
			}
			f.Close()
			return abs, err == nil
		}
		if !errors.Is(err, fs.ErrNotExist) || p == "." {
			return "", false // a link out, a loop, a file on the way
		}
	}
}

// Show returns how a path is shown to the model: relative to the
// session's directory when it is inside it, absolute otherwise.
func (r *Root) Show(path string) string {
	d, rel, err := r.lexical(path)
	if err != nil {
		return path
	}
	if d == &r.dirs[0] {
		return filepath.ToSlash(rel)
	}
	return filepath.Join(d.dir, rel)
}

// explain rewords an os.Root error so it names the path and the root.
func (r *Root) explain(path string, d *dirRoot, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case strings.Contains(err.Error(), "path escapes from parent"):
		return fmt.Errorf("path %s leads outside the workspace %s (through \"..\" or a symbolic link): refused", path, d.dir)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("path %s is a symbolic link loop or leads outside the workspace %s: refused", path, d.dir)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist in the workspace %s", path, d.dir)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: a part of the path is not a directory (workspace %s)", path, d.dir)
	case errors.Is(err, syscall.ENXIO):
		// What opening a Unix socket (or a device without a driver) says.
		return fmt.Errorf("%s is a socket or a device, not a regular file: the file tools read and write only regular files (workspace %s)", path, d.dir)
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%s is a directory, not a file (workspace %s)", path, d.dir)
	}
	return fmt.Errorf("%s (workspace %s): %w", path, d.dir, err)
}

// checkLinks refuses the regular file f (fi is its Stat) if it has more
// than one hard link: its other names may lie outside the workspace, and
// writing it would change them too. A file whose links cannot be counted
// is refused as well.
func (r *Root) checkLinks(path string, d *dirRoot, f *os.File, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return nil
	}
	n, ok := openedLinks(f, fi)
	switch {
	case !ok:
		return &linkedError{fmt.Sprintf("%s: bridle cannot count its hard links, so it cannot tell whether other names of it lie outside the workspace %s, and refuses to use it", path, d.dir)}
	case n > 1:
		return &linkedError{fmt.Sprintf("%s has %d hard links; bridle cannot tell whether the others are outside the workspace %s, so it refuses to use it", path, n, d.dir)}
	}
	return nil
}

// linkedError is checkLinks' refusal; it is ErrLinked (errors.Is).
type linkedError struct{ msg string }

func (e *linkedError) Error() string        { return e.msg }
func (e *linkedError) Is(target error) bool { return target == ErrLinked }

// Open opens a regular file of the workspace for reading.
func (r *Root) Open(path string) (*os.File, fs.FileInfo, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return nil, nil, err
	}
	g := r.guard()
	lexical := filepath.Join(d.dir, rel)
	if h := g.byPath(lexical); h != nil {
		return nil, nil, h.refuse(path)
	}
	f, err := workspace.OpenNoWait(d.root, rel)
	if err != nil {
		return nil, nil, r.explain(path, d, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, r.explain(path, d, err)
	}
	if _, err := r.checkOpened(g, f, fi, path, lexical); err != nil {
		f.Close()
		return nil, nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is a directory, not a file: use list_dir (workspace %s)", path, d.dir)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, d, fi)
	}
	if err := r.checkLinks(path, d, f, fi); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// notRegular refuses a named pipe, socket or device: reading one can block
// forever or never end.
func notRegular(path string, d *dirRoot, fi fs.FileInfo) error {
	return fmt.Errorf("%s is %s, not a regular file: the file tools read and write only regular files (workspace %s)", path, workspace.KindOf(fi.Mode()), d.dir)
}

// checkOpened refuses f, opened for path (lexical as an absolute path), if
// it is hidden or lies in a hidden directory (see guard). For a directory
// it returns its real path ("" when the OS cannot tell).
func (r *Root) checkOpened(g *guard, f *os.File, fi fs.FileInfo, path, lexical string) (string, error) {
	if g == nil {
		return "", nil
	}
	var h *hiddenPath
	var real string
	var err error
	if fi.IsDir() {
		h, real, err = g.checkDir(f)
	} else {
		h, err = g.checkFile(f, lexical)
	}
	if h != nil {
		return "", h.refuse(path)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	return real, nil
}

// checkRoot checks the directory an os.Root stands for, opened through it.
func (r *Root) checkRoot(g *guard, dir *os.Root, path string) (string, error) {
	f, err := dir.Open(".")
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	return r.checkOpened(g, f, fi, path, "")
}

// ReadFile reads a file of the workspace, refusing files larger than max
// bytes (max <= 0: no limit).
func (r *Root) ReadFile(path string, max int64) ([]byte, error) {
	f, fi, err := r.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if max <= 0 {
		return io.ReadAll(f)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for this tool", path, fi.Size(), max)
	}
	// Bounded as it reads too: a file may grow between the stat and the
	// read.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		return nil, fmt.Errorf("%s grew over the %d-byte limit for this tool while it was read", path, max)
	}
	return data, err
}

// Lstat describes a path of the workspace without following a final
// link. A hidden path (by name) is refused, as the tools refuse it.
func (r *Root) Lstat(path string) (fs.FileInfo, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	if h := r.guard().byPath(filepath.Join(d.dir, rel)); h != nil {
		return nil, h.refuse(path)
	}
	fi, err := d.root.Lstat(rel)
	if err != nil {
		return nil, r.explain(path, d, err)
	}
	return fi, nil
}

// Readlink returns the target of a symbolic link in the workspace.
func (r *Root) Readlink(path string) (string, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return "", err
	}
	if h := r.guard().byPath(filepath.Join(d.dir, rel)); h != nil {
		return "", h.refuse(path)
	}
	t, err := d.root.Readlink(rel)
	if err != nil {
		return "", r.explain(path, d, err)
	}
	return t, nil
}

// ReadDir lists a directory of the workspace. Hidden entries are left
// out, as if they were not there; a hidden directory is refused.
func (r *Root) ReadDir(path string) ([]fs.DirEntry, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	g := r.guard()
	lexical := filepath.Join(d.dir, rel)
	if h := g.byPath(lexical); h != nil {
		return nil, h.refuse(path)
	}
	f, err := workspace.OpenNoWait(d.root, rel)
	if err != nil {
		return nil, r.explain(path, d, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, r.explain(path, d, err)
	}
	real, err := r.checkOpened(g, f, fi, path, lexical)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is a file, not a directory: use read_file (workspace %s)", path, d.dir)
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, r.explain(path, d, err)
	}
	if g == nil {
		return ents, nil
	}
	if real == "" {
		real = lexical
	}
	return slices.DeleteFunc(ents, func(e fs.DirEntry) bool {
		if g.byPath(filepath.Join(real, e.Name())) != nil {
			return true
		}
		info, err := e.Info()
		if err != nil {
			return false
		}
		id, ok := entryID(filepath.Join(real, e.Name()), info)
		return ok && g.byID(id) != nil
	}), nil
}

// openRoot opens a directory of the workspace as an os.Root of its own,
// for walking; the caller closes it.
func (r *Root) openRoot(path string) (*os.Root, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	sub, err := d.root.OpenRoot(rel)
	if err != nil {
		return nil, r.explain(path, d, err)
	}
	return sub, nil
}

var errWorkspaceDir = errors.New("is a workspace directory, not a file")

// entry resolves a path a write or a removal names: inside the workspace,
// not one of its directories itself, and not a hidden path by name (the
// caller checks identities once it has the entry open).
func (r *Root) entry(path string) (d *dirRoot, rel string, g *guard, err error) {
	d, rel, err = r.resolve(path)
	if err != nil {
		return nil, "", nil, err
	}
	if rel == "." {
		return nil, "", nil, fmt.Errorf("%s %w", path, errWorkspaceDir)
	}
	g = r.guard()
	if h := g.byPath(filepath.Join(d.dir, rel)); h != nil {
		return nil, "", nil, h.refuse(path)
	}
	return d, rel, g, nil
}

// WriteFile replaces (or creates) a file of the workspace atomically: the
// new content is written to a temporary file beside it and renamed over
// it, so a crash leaves the old or the new file, never half of one. The
// file keeps its mode; missing parent directories are created. Both files
// are made through the descriptor of the parent directory, once it has
// been checked not to be hidden (nor any directory above it).
func (r *Root) WriteFile(path string, data []byte) error {
	return r.WriteFileMode(path, data, 0o644)
}

// WriteFileMode is WriteFile making a file that does not exist with the
// permission bits perm (a file that exists keeps its own): what a rewind
// uses to put back a deleted file as it was, executable or private.
func (r *Root) WriteFileMode(path string, data []byte, perm fs.FileMode) error {
	if perm = perm.Perm(); perm == 0 {
		perm = 0o644
	}
	d, rel, g, err := r.entry(path)
	if err != nil {
		return err
	}
	lexical := filepath.Join(d.dir, rel)
	if f, err := workspace.OpenNoWait(d.root, rel); err == nil {
		fi, err := f.Stat()
		if err == nil {
			_, err = r.checkOpened(g, f, fi, path, lexical)
		} else {
			err = r.explain(path, d, err)
		}
		if err == nil && fi.Mode().IsRegular() {
			err = r.checkLinks(path, d, f, fi)
		}
		f.Close()
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory, not a file (workspace %s)", path, d.dir)
		}
		if !fi.Mode().IsRegular() {
			return notRegular(path, d, fi)
		}
		perm = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return r.explain(path, d, err)
	}
	base := filepath.Base(rel)
	dir, err := r.openParent(g, d, path, filepath.Dir(rel), base)
	if err != nil {
		return err
	}
	defer dir.Close()
	tmp := fmt.Sprintf(".%s.bridle-%d-%d.tmp", base, os.Getpid(), time.Now().UnixNano())
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_EXCL, perm)
	if err != nil {
		return r.explain(path, d, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// O_CREATE's perm is masked by the umask; keep the old mode exactly.
		err = dir.Chmod(tmp, perm)
	}
	if err == nil {
		err = dir.Rename(tmp, base)
	}
	if err != nil {
		dir.Remove(tmp)
		return r.explain(path, d, err)
	}
	return nil
}

// openParent opens the directory dir (relative to d) that the file base
// (path, as the model named it) is to be written in, creating what is missing of it, and checks that
// neither it nor the name to be written in it is hidden. A missing
// directory is made one level at a time, each in the directory above it
// once that one has been checked, so no directory is ever created in a
// hidden one.
func (r *Root) openParent(g *guard, d *dirRoot, path, dir, base string) (*os.Root, error) {
	if g == nil {
		if dir != "." {
			if err := d.root.MkdirAll(dir, 0o755); err != nil {
				return nil, r.explain(path, d, err)
			}
		}
		sub, err := d.root.OpenRoot(dir)
		if err != nil {
			return nil, r.explain(path, d, err)
		}
		return sub, nil
	}
	sub, err := d.root.OpenRoot(dir)
	var real string
	if err == nil {
		real, err = r.checkRoot(g, sub, path)
		if err != nil {
			sub.Close()
			return nil, err
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		sub, real, err = r.mkdirs(g, d, path, dir)
		if err != nil {
			return nil, err
		}
	} else {
		return nil, r.explain(path, d, err)
	}
	if real == "" {
		real = filepath.Join(d.dir, dir)
	}
	refuse := g.byPath(filepath.Join(real, base))
	if fi, err := sub.Lstat(base); err == nil && refuse == nil {
		// A hidden file renamed here keeps its identity.
		if id, ok := entryID(filepath.Join(real, base), fi); ok {
			refuse = g.byID(id)
		}
	}
	if refuse != nil {
		sub.Close()
		return nil, refuse.refuse(path)
	}
	return sub, nil
}

// mkdirs makes the directory dir (relative to d), one checked level at a
// time, and returns it open with its real path.
func (r *Root) mkdirs(g *guard, d *dirRoot, path, dir string) (*os.Root, string, error) {
	cur, err := d.root.OpenRoot(".")
	if err != nil {
		return nil, "", r.explain(path, d, err)
	}
	real, err := r.checkRoot(g, cur, path)
	if err != nil {
		cur.Close()
		return nil, "", err
	}
	here := d.dir
	for _, c := range strings.Split(dir, string(filepath.Separator)) {
		if real == "" {
			real = here
		}
		here = filepath.Join(here, c)
		next, err := cur.OpenRoot(c)
		if errors.Is(err, fs.ErrNotExist) {
			if h := g.byPath(filepath.Join(real, c)); h != nil {
				cur.Close()
				return nil, "", h.refuse(path)
			}
			if err = cur.Mkdir(c, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				next, err = cur.OpenRoot(c)
			}
		}
		cur.Close()
		if err != nil {
			return nil, "", r.explain(path, d, err)
		}
		cur = next
		if real, err = r.checkRoot(g, cur, path); err != nil {
			cur.Close()
			return nil, "", err
		}
	}
	return cur, real, nil
}

// Remove removes a file of the workspace (a rewind taking back a file
// the agent created), refusing hidden paths and directories; a name that
// does not exist is no error. Like WriteFile, it acts through the parent
// directory's descriptor once that directory (its real path, not the name
// it was reached by) and the name in it have been checked.
func (r *Root) Remove(path string) error {
	d, rel, g, err := r.entry(path)
	if err != nil {
		return err
	}
	if _, err := d.root.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return r.explain(path, d, err)
	}
	base := filepath.Base(rel)
	dir, err := r.openParent(g, d, path, filepath.Dir(rel), base)
	if err != nil {
		return err
	}
	defer dir.Close()
	fi, err := dir.Lstat(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return r.explain(path, d, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory: only files are removed", path)
	}
	if err := dir.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return r.explain(path, d, err)
	}
	return nil
}

// RemoveEmptyDir removes the workspace directory path if it is empty and
// was created after since, and reports whether it did: a rewind takes
// away the directories the agent's commands made, never one that was
// there before (or whose birth the filesystem does not keep), nor the
// workspace's own directories.
func (r *Root) RemoveEmptyDir(path string, since time.Time) (bool, error) {
	d, rel, g, err := r.entry(path)
	if errors.Is(err, errWorkspaceDir) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi, err := d.root.Lstat(rel); err != nil || !fi.IsDir() {
		return false, nil // gone, or not a directory (a link is never followed)
	}
	base := filepath.Base(rel)
	dir, err := r.openParent(g, d, path, filepath.Dir(rel), base)
	if err != nil {
		return false, err
	}
	defer dir.Close()
	f, err := workspace.OpenNoWait(dir, base)
	if err != nil {
		return false, nil
	}
	fi, err := f.Stat()
	born, known := birthTime(f)
	f.Close()
	if err != nil || !fi.IsDir() || !known || born.Before(since) {
		return false, nil
	}
	if err := dir.Remove(base); err != nil {
		return false, nil // not empty: the directory stays
	}
	return true, nil
}

// CheckWrite says, without changing anything, whether WriteFile would
// refuse path as hidden: a write is refused before it is proposed.
func (r *Root) CheckWrite(path string) error {
	d, rel, err := r.resolve(path)
	if err != nil || rel == "." {
		return nil // WriteFile says what is wrong
	}
	g := r.guard()
	if g == nil {
		return nil
	}
	if h := g.byPath(filepath.Join(d.dir, rel)); h != nil {
		return h.refuse(path)
	}
	// The deepest directory on the way that exists, checked, and the
	// rest of the path below its real path.
	dir, rest := filepath.Dir(rel), filepath.Base(rel)
	for {
		sub, err := d.root.OpenRoot(dir)
		if err == nil {
			real, err := r.checkRoot(g, sub, path)
			sub.Close()
			if err != nil {
				return err
			}
			if real == "" {
				real = filepath.Join(d.dir, dir)
			}
			if h := g.byPath(filepath.Join(real, rest)); h != nil {
				return h.refuse(path)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == "." {
			return nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = filepath.Dir(dir)
	}
}
