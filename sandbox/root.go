package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Root confines file access to the workspace: the session's directory and
// the editor's additional directories. It is built on os.Root, so "..",
// absolute paths and symlinks cannot lead outside it, even when a link is
// swapped in between a check and a use.
type Root struct {
	dirs []dirRoot // dirs[0] is the session's directory
	// hidden are absolute paths inside or outside the workspace that no
	// tool may read or write (bridle's own files, credential stores); the
	// box hides them from commands too.
	hidden []string
}

type dirRoot struct {
	dir  string
	root *os.Root
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
		r.dirs = append(r.dirs, dirRoot{dir: d, root: or})
	}
	return r, nil
}

// Hide adds paths no tool may read or write, and commands do not see
// (HiddenPaths makes the list).
func (r *Root) Hide(paths ...string) { r.hidden = append(r.hidden, paths...) }

// Hidden returns the paths Hide added.
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

// where names the workspace in an error message.
func (r *Root) where() string {
	if len(r.dirs) == 1 {
		return "the workspace " + r.dirs[0].dir
	}
	return "the workspace (" + strings.Join(r.Dirs(), ", ") + ")"
}

// resolve finds the directory a path the model gave belongs to: relative
// paths start in the session's directory; absolute ones must lie inside
// one of the workspace's directories. It returns the path relative to
// that directory, as os.Root wants it.
func (r *Root) resolve(path string) (*dirRoot, string, error) {
	if path == "" {
		return nil, "", fmt.Errorf("empty path: give a path relative to %s", r.where())
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
	return nil, "", fmt.Errorf("path %s is outside %s", path, r.where())
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
	return fmt.Errorf("%s is not a directory in %s", path, r.where())
}

// Abs returns the absolute path of a workspace path, lexically: for
// editor locations and messages, never for access.
func (r *Root) Abs(path string) string {
	d, rel, err := r.resolve(path)
	if err != nil {
		return path
	}
	return filepath.Join(d.dir, rel)
}

// Show returns how a path is shown to the model: relative to the
// session's directory when it is inside it, absolute otherwise.
func (r *Root) Show(path string) string {
	d, rel, err := r.resolve(path)
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
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%s is a directory, not a file (workspace %s)", path, d.dir)
	}
	return fmt.Errorf("%s (workspace %s): %w", path, d.dir, err)
}

// checkLinks refuses a file with more than one hard link: its other names
// may lie outside the workspace, and writing it would change them too.
func (r *Root) checkLinks(path string, d *dirRoot, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
		return fmt.Errorf("%s has %d hard links; bridle cannot tell whether the others are outside the workspace %s, so it refuses to use it", path, st.Nlink, d.dir)
	}
	return nil
}

// Open opens a regular file of the workspace for reading.
func (r *Root) Open(path string) (*os.File, fs.FileInfo, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := d.root.Open(rel)
	if err != nil {
		return nil, nil, r.explain(path, d, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, r.explain(path, d, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is a directory, not a file: use list_dir (workspace %s)", path, d.dir)
	}
	if err := r.checkLinks(path, d, fi); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadFile reads a file of the workspace, refusing files larger than max
// bytes (max <= 0: no limit).
func (r *Root) ReadFile(path string, max int64) ([]byte, error) {
	f, fi, err := r.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if max > 0 && fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for this tool", path, fi.Size(), max)
	}
	return io.ReadAll(f)
}

// Stat describes a path of the workspace without following a final link.
func (r *Root) Lstat(path string) (fs.FileInfo, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return nil, err
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
	t, err := d.root.Readlink(rel)
	if err != nil {
		return "", r.explain(path, d, err)
	}
	return t, nil
}

// ReadDir lists a directory of the workspace.
func (r *Root) ReadDir(path string) ([]fs.DirEntry, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	f, err := d.root.Open(rel)
	if err != nil {
		return nil, r.explain(path, d, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, r.explain(path, d, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is a file, not a directory: use read_file (workspace %s)", path, d.dir)
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, r.explain(path, d, err)
	}
	return ents, nil
}

// FS returns a confined file system rooted at a directory of the
// workspace, and the directory's path as the model sees it, for walking.
func (r *Root) FS(path string) (fs.FS, error) {
	d, rel, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	sub, err := d.root.OpenRoot(rel)
	if err != nil {
		return nil, r.explain(path, d, err)
	}
	return sub.FS(), nil
}

// WriteFile replaces (or creates) a file of the workspace atomically: the
// new content is written to a temporary file beside it and renamed over
// it, so a crash leaves the old or the new file, never half of one. The
// file keeps its mode; missing parent directories are created.
func (r *Root) WriteFile(path string, data []byte) error {
	d, rel, err := r.resolve(path)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("%s is a workspace directory, not a file", path)
	}
	perm := fs.FileMode(0o644)
	if f, err := d.root.Open(rel); err == nil {
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			return r.explain(path, d, err)
		}
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory, not a file (workspace %s)", path, d.dir)
		}
		if err := r.checkLinks(path, d, fi); err != nil {
			return err
		}
		perm = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return r.explain(path, d, err)
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return r.explain(path, d, err)
		}
	}
	tmp := filepath.Join(filepath.Dir(rel), fmt.Sprintf(".%s.bridle-%d-%d.tmp", filepath.Base(rel), os.Getpid(), time.Now().UnixNano()))
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_EXCL, perm)
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
		err = d.root.Chmod(tmp, perm)
	}
	if err == nil {
		err = d.root.Rename(tmp, rel)
	}
	if err != nil {
		d.root.Remove(tmp)
		return r.explain(path, d, err)
	}
	return nil
}
