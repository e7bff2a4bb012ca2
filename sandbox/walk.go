package sandbox

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"syscall"

	"github.com/bridle-dev/bridle/workspace"
)

// fileTree is a directory of the workspace seen as a tree of files: what
// glob and grep walk. Walks skip .git and what .gitignore files ignore,
// and never follow symbolic links.
type fileTree interface {
	// walk calls fn with the slash path (relative to the tree's top) of
	// every regular file; fn returning fs.SkipAll stops the walk.
	walk(ctx context.Context, fn func(rel string) error) error
	// read returns a file's content, refusing files over max bytes
	// (errTooLarge) and with other hard links (errLinked).
	read(rel string, max int64) ([]byte, error)
	close()
}

var (
	errTooLarge = errors.New("file too large")
	errLinked   = errors.New("file has other hard links")
)

// openTree opens the workspace directory dir for walking.
func openTree(env *Env, dir string) (fileTree, error) {
	top, sub, err := env.Root.split(dir)
	if err != nil {
		return nil, err
	}
	// Rules from the top of the workspace down to dir: a .gitignore
	// above dir still applies.
	topFS, err := env.Root.FS(top)
	if err != nil {
		return nil, err
	}
	ig := workspace.Load(topFS, sub)
	fsys, err := env.Root.FS(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := fs.Stat(fsys, "."); err != nil || !fi.IsDir() {
		return nil, env.Root.notDir(dir)
	}
	if t, ok := openFastTree(env, dir, sub, ig); ok {
		return t, nil
	}
	return &fsTree{fsys: fsys, prefix: sub, ig: ig}, nil
}

// fsTree walks through io/fs on an os.Root: portable, slower.
type fsTree struct {
	fsys   fs.FS
	prefix string // the tree's top below the workspace directory, for .gitignore paths
	ig     *workspace.Ignore
}

func (t *fsTree) close() {}

func (t *fsTree) walk(ctx context.Context, fn func(rel string) error) error {
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
		parent := ignores[path.Dir(p)]
		full := path.Join(t.prefix, p)
		if d.IsDir() {
			if d.Name() == ".git" || parent.Match(full, true) {
				return fs.SkipDir
			}
			cur := parent
			if data, err := fs.ReadFile(t.fsys, path.Join(p, ".gitignore")); err == nil {
				cur = cur.With(full, data)
			}
			ignores[p] = cur
			return nil
		}
		if !d.Type().IsRegular() || parent.Match(full, false) {
			return nil
		}
		return fn(p)
	})
}

func (t *fsTree) read(rel string, max int64) ([]byte, error) {
	f, err := t.fsys.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return nil, errLinked
	}
	if fi.Size() > max {
		return nil, errTooLarge
	}
	return io.ReadAll(f)
}
