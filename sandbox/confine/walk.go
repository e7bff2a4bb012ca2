package confine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync/atomic"

	"github.com/bridle-dev/bridle/workspace"
)

// Tree is a directory of the workspace seen as a tree of files: what
// glob and grep walk. Walks skip .git, what .gitignore files ignore and
// hidden paths (bridle's own files, credential stores), and never follow
// symbolic links.
type Tree interface {
	// Walk calls fn with every regular file; fn returning fs.SkipAll
	// stops the walk. fn must Hold the file to Read it after it returns.
	Walk(ctx context.Context, fn func(f File) error) error
	// WalkDirs is Walk that also calls dir with each directory it goes
	// into (its slash path below the top), before what it holds: a tree
	// of countless empty directories holds no file, yet takes time to
	// walk, and dir may stop it (an error from dir ends the walk with
	// that error).
	WalkDirs(ctx context.Context, dir func(rel string) error, fn func(f File) error) error
	// Read returns a file's content, refusing files over max bytes
	// (ErrTooLarge), with other hard links (ErrLinked) and hidden ones
	// (ErrHidden).
	Read(f File, max int64) ([]byte, error)
	// Stat returns a file's stamp, without following a symbolic link.
	Stat(f File) (Stamp, error)
	Close()
}

// File is a regular file a walk found.
type File struct {
	Rel string // slash path below the tree's top
	// dir is the open directory holding it (fast tree only), which the
	// walk checked: the file is read through it, not through its path.
	dir  *dirFD
	name string
}

// Hold keeps f's directory open after the walk's callback returns, for a
// Read later; Release gives it back.
func (f File) Hold() {
	if f.dir != nil {
		f.dir.refs.Add(1)
	}
}

func (f File) Release() {
	if f.dir != nil {
		f.dir.release()
	}
}

// dirFD is an open directory shared by the walk and the reads of its
// files; the last to release it closes it.
type dirFD struct {
	fd   int
	dev  uint64
	refs atomic.Int32
}

func newDirFD(fd int, dev uint64) *dirFD {
	d := &dirFD{fd: fd, dev: dev}
	d.refs.Store(1)
	return d
}

func (d *dirFD) release() {
	if d.refs.Add(-1) == 0 {
		closeFD(d.fd)
	}
}

var (
	ErrTooLarge = errors.New("file too large")
	ErrLinked   = errors.New("file has other hard links")
	ErrHidden   = errors.New("file is hidden")
)

// walkGuard is what a walk skips: the hidden paths below its top, by
// name, and every hidden file or directory, by identity.
type walkGuard struct {
	g     *guard
	top   string // the real path of the walk's top
	below map[string]*hiddenPath
}

func newWalkGuard(g *guard, real string) *walkGuard {
	if g == nil {
		return nil
	}
	return &walkGuard{g: g, top: real, below: g.below(real)}
}

// skipPath reports whether rel (below the walk's top) is a hidden path.
func (w *walkGuard) skipPath(rel string) bool { return w != nil && w.below[rel] != nil }

// skipID reports whether the file or directory id is hidden.
func (w *walkGuard) skipID(id fileID) bool { return w != nil && w.g.ids[id] != nil }

// skipEntry is skipID for the entry an fs walk found at rel (a slash
// path below the top), which fi describes.
func (w *walkGuard) skipEntry(rel string, fi fs.FileInfo) bool {
	if w == nil {
		return false
	}
	id, ok := entryID(filepath.Join(w.top, filepath.FromSlash(rel)), fi)
	return ok && w.skipID(id)
}

// skipFile is skipID for a file the walk opened, whose Stat is fi.
func (w *walkGuard) skipFile(f *os.File, fi fs.FileInfo) bool {
	if w == nil {
		return false
	}
	id, ok := openedID(f, fi)
	return ok && w.skipID(id)
}

// OpenTree opens the workspace directory dir for walking. A hidden
// directory (or one inside a hidden directory) is refused.
func (r *Root) OpenTree(dir string) (Tree, error) {
	d, rel, err := r.resolve(dir)
	if err != nil {
		return nil, err
	}
	sub := filepath.ToSlash(rel)
	if rel == "." {
		sub = ""
	}
	g := r.guard()
	lexical := filepath.Join(d.dir, rel)
	if h := g.byPath(lexical); h != nil {
		return nil, h.refuse(dir)
	}
	// Without waiting: a named pipe given as the directory would block.
	top, err := workspace.OpenNoWait(d.root, rel)
	if err != nil {
		return nil, r.explain(dir, d, err)
	}
	fi, err := top.Stat()
	if err != nil {
		top.Close()
		return nil, r.explain(dir, d, err)
	}
	real, err := r.checkOpened(g, top, fi, dir, lexical)
	if err != nil {
		top.Close()
		return nil, err
	}
	if !fi.IsDir() {
		top.Close()
		return nil, r.notDir(dir)
	}
	if real == "" {
		real = lexical
	}
	hide := newWalkGuard(g, real)
	// Rules from the top of the workspace down to dir: a .gitignore
	// above dir still applies.
	ig := workspace.Load(d.root, sub)
	if t, ok := openFastTree(top, sub, ig, hide); ok {
		return t, nil
	}
	defer top.Close()
	sr, err := r.openRoot(dir)
	if err != nil {
		return nil, err
	}
	// The fs walk opens dir again by name: it must be the directory
	// that was checked.
	again, err := sr.Stat(".")
	if err != nil || !fi.IsDir() || !os.SameFile(fi, again) {
		sr.Close()
		return nil, fmt.Errorf("%s changed while bridle opened it; try again", dir)
	}
	return newFSTree(sr, sub, ig, hide), nil
}

// fsTree walks through io/fs on an os.Root: portable, slower.
type fsTree struct {
	root   *os.Root // the tree's top; files are opened through it
	fsys   fs.FS    // root's
	prefix string   // the tree's top below the workspace directory, for .gitignore paths
	ig     *workspace.Ignore
	hide   *walkGuard
}

// newFSTree walks root, which it closes when it is closed.
func newFSTree(root *os.Root, prefix string, ig *workspace.Ignore, hide *walkGuard) *fsTree {
	return &fsTree{root: root, fsys: root.FS(), prefix: prefix, ig: ig, hide: hide}
}

func (t *fsTree) Close() { t.root.Close() }

func (t *fsTree) Walk(ctx context.Context, fn func(f File) error) error {
	return t.WalkDirs(ctx, nil, fn)
}

func (t *fsTree) WalkDirs(ctx context.Context, dir func(rel string) error, fn func(f File) error) error {
	ignores := map[string]*workspace.Ignore{".": t.ig}
	return fs.WalkDir(t.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if p == "." {
				return err
			}
			return nil // unreadable entries are skipped, not fatal
		}
		if p == "." {
			return nil
		}
		if t.hide != nil {
			if t.hide.skipPath(p) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if fi, err := d.Info(); err != nil || t.hide.skipEntry(p, fi) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		parent := ignores[path.Dir(p)]
		full := path.Join(t.prefix, p)
		if d.IsDir() {
			if d.Name() == ".git" || parent.Match(full, true) {
				return fs.SkipDir
			}
			cur := parent
			if data, err := workspace.ReadRegularIn(t.root, path.Join(p, ".gitignore")); err == nil {
				cur = cur.With(full, data)
			}
			ignores[p] = cur
			if dir != nil {
				return dir(p)
			}
			return nil
		}
		if !d.Type().IsRegular() || parent.Match(full, false) {
			return nil
		}
		return fn(File{Rel: p, name: d.Name()})
	})
}

func (t *fsTree) Stat(f File) (Stamp, error) {
	fi, err := fs.Lstat(t.fsys, f.Rel)
	if err != nil {
		return Stamp{}, err
	}
	st, ok := StampOf(fi)
	if !ok {
		return Stamp{}, fmt.Errorf("%s: no file status here", f.Rel)
	}
	return st, nil
}

func (t *fsTree) Read(f File, max int64) ([]byte, error) {
	// Without waiting, and the type checked on the open file: a named
	// pipe renamed over the file would wait for a writer.
	file, err := workspace.OpenNoWait(t.root, f.Rel)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if t.hide.skipFile(file, fi) {
		return nil, ErrHidden
	}
	if n, ok := openedLinks(file, fi); !ok || n > 1 {
		return nil, ErrLinked
	}
	if fi.Size() > max {
		return nil, ErrTooLarge
	}
	return io.ReadAll(file)
}
