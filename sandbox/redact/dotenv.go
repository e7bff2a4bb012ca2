package redact

import (
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/workspace"
)

// The search for .env files below a workspace is bounded: it runs when a
// session opens, in trees of any size.
const (
	// dotEnvDepth is how many directories deep below the top it looks
	// (services/api/.env.local is 2).
	dotEnvDepth = 8
	// dotEnvDirs bounds the directories it reads.
	dotEnvDirs = 5000
	// dotEnvFiles bounds the .env files it reads.
	dotEnvFiles = 100
	// dotEnvMax bounds one .env file, and a .gitignore.
	dotEnvMax = 1 << 20
)

// DotEnvName reports whether a file name is a .env file: .env, .env.local,
// .env.production …, but not the examples and templates meant to be
// committed.
func DotEnvName(n string) bool {
	if n != ".env" && !strings.HasPrefix(n, ".env.") {
		return false
	}
	return !strings.HasSuffix(n, ".example") && !strings.HasSuffix(n, ".sample") && !strings.HasSuffix(n, ".template")
}

// LoadDotEnvTree adds the values of the .env files in dir and in the
// directories below it (sub/.env, services/api/.env.local), each named in
// the marker by its path from dir. The walk skips .git, node_modules and
// the directories .gitignore ignores (not the .env files it ignores: they
// always are), never follows a symbolic link, reads only regular files
// and never waits on one (a FIFO named .env), and is bounded in depth,
// directories, files and size. It returns the files read and whether the
// bounds cut the walk short.
func (r *Redactor) LoadDotEnvTree(dir string) (files []string, complete bool) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, true
	}
	defer root.Close()
	var ig *workspace.Ignore
	if data, err := readSmall(root, ".git/info/exclude"); err == nil {
		ig = ig.With("", data)
	}
	type todo struct {
		rel   string
		depth int
		ig    *workspace.Ignore
	}
	stack := []todo{{".", 0, ig}}
	dirs := 0
	complete = true
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if dirs++; dirs > dotEnvDirs {
			return files, false
		}
		entries, err := readDir(root, d.rel)
		if err != nil {
			continue
		}
		slashRel := "" // the directory as .gitignore paths name it
		if d.rel != "." {
			slashRel = d.rel
		}
		if slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == ".gitignore" }) {
			if data, err := readSmall(root, path.Join(d.rel, ".gitignore")); err == nil {
				d.ig = d.ig.With(slashRel, data)
			}
		}
		var sub []todo
		for _, e := range entries {
			n := e.Name()
			rel := path.Join(d.rel, n)
			switch {
			case e.Type().IsRegular() && DotEnvName(n):
				if len(files) == dotEnvFiles {
					return files, false
				}
				data, err := readSmall(root, rel)
				if err != nil {
					continue
				}
				files = append(files, rel)
				r.AddDotEnv(rel, data)
			case e.IsDir(): // a symbolic link to a directory is not one
				if n == ".git" || n == "node_modules" || d.ig.Match(rel, true) {
					continue
				}
				if d.depth == dotEnvDepth {
					complete = false
					continue
				}
				sub = append(sub, todo{rel, d.depth + 1, d.ig})
			}
		}
		// Depth first, in name order.
		slices.Reverse(sub)
		stack = append(stack, sub...)
	}
	return files, complete
}

// readDir lists a directory below root in name order, opening it as
// readSmall opens files: a directory replaced by a FIFO since it was
// listed is refused, not waited on.
func readDir(root *os.Root, name string) ([]fs.DirEntry, error) {
	f, err := workspace.OpenNoWait(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return nil, fs.ErrInvalid
	}
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// readSmall reads a regular file below root, at most dotEnvMax bytes. It
// opens without blocking and checks the file's type on the open file, so
// a FIFO or a device put in its place is refused, never waited on.
func readSmall(root *os.Root, name string) ([]byte, error) {
	f, err := workspace.OpenNoWait(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fs.ErrInvalid
	}
	if fi.Size() > dotEnvMax {
		return nil, fs.ErrInvalid
	}
	return io.ReadAll(io.LimitReader(f, dotEnvMax))
}
