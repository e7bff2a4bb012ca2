package sandbox

import (
	"context"
	"io/fs"
	"path"

	"github.com/bridle-dev/bridle/workspace"
)

// walkFiles calls fn for every regular file under the workspace directory
// dir (as the model named it), skipping .git and what .gitignore files
// ignore. rel is the file's slash path relative to dir. fn returning
// fs.SkipAll stops the walk.
func walkFiles(ctx context.Context, env *Env, dir string, fn func(fsys fs.FS, rel string, d fs.DirEntry) error) error {
	// Load the rules from the top of the workspace directory down to dir,
	// so a .gitignore above dir still applies.
	top, sub, err := env.Root.split(dir)
	if err != nil {
		return err
	}
	topFS, err := env.Root.FS(top)
	if err != nil {
		return err
	}
	ig := workspace.Load(topFS, sub)
	fsys, err := env.Root.FS(dir)
	if err != nil {
		return err
	}
	if fi, err := fs.Stat(fsys, "."); err != nil || !fi.IsDir() {
		return env.Root.notDir(dir)
	}
	prefix := sub
	ignores := map[string]*workspace.Ignore{".": ig}
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if p == "." {
				return err
			}
			return nil // unreadable entries are skipped, not fatal
		}
		parentIg := ignores[path.Dir(p)]
		full := p
		if prefix != "" {
			full = path.Join(prefix, p)
		}
		if d.IsDir() {
			if p != "." {
				if d.Name() == ".git" || parentIg.Match(full, true) {
					return fs.SkipDir
				}
			}
			cur := parentIg
			if data, err := fs.ReadFile(fsys, path.Join(p, ".gitignore")); err == nil && p != "." {
				cur = cur.With(full, data)
			} else if p == "." {
				cur = ig
			}
			ignores[p] = cur
			return nil
		}
		if !d.Type().IsRegular() || parentIg.Match(full, false) {
			return nil
		}
		return fn(fsys, p, d)
	})
}
