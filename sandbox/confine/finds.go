package confine

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/bridle-dev/bridle/workspace"
)

// A Finder answers, for the many files one command changes, whether a
// walk of the workspace (Tree: glob, grep, the scans around commands)
// would find each: inside a workspace directory, not below .git, not
// ignored by a .gitignore, not hidden. Each directory's rules are read
// once (Forget reads them again), and the hidden paths' guard is built
// once: a Finder lives for one command. It is not safe for concurrent
// use.
type Finder struct {
	r     *Root
	g     *guard
	rules map[ruleKey]*workspace.Ignore
}

type ruleKey struct {
	d   *dirRoot
	dir string // slash path below d, "" at its top
}

// Finder returns a Finder of r's files as they are now.
func (r *Root) Finder() *Finder {
	return &Finder{r: r, g: r.guard(), rules: map[ruleKey]*workspace.Ignore{}}
}

// Forget drops the rules read so far: a .gitignore changed.
func (f *Finder) Forget() { clear(f.rules) }

// Finds reports whether a walk would find the file (or, with isDir, the
// directory) at path, an absolute path.
func (f *Finder) Finds(p string, isDir bool) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	d, rel, err := f.r.lexical(p)
	if err != nil || rel == "." {
		return false
	}
	abs := filepath.Join(d.dir, rel)
	if f.g.byPath(abs) != nil {
		return false
	}
	slash := filepath.ToSlash(rel)
	parts := strings.Split(slash, "/")
	for i := range parts {
		if parts[i] == ".git" {
			return false
		}
		sub := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		if f.ignore(d, parentOf(sub)).Match(sub, !last || isDir) {
			return false
		}
	}
	if id, ok := statID(abs); ok && f.g.byID(id) != nil {
		return false
	}
	return true
}

func parentOf(slash string) string {
	if i := strings.LastIndexByte(slash, '/'); i >= 0 {
		return slash[:i]
	}
	return ""
}

// ignore returns the rules that apply inside dir of d: those of the
// directories above and its own .gitignore, as Tree's walks read them.
func (f *Finder) ignore(d *dirRoot, dir string) *workspace.Ignore {
	k := ruleKey{d, dir}
	if ig, ok := f.rules[k]; ok {
		return ig
	}
	var ig *workspace.Ignore
	if dir == "" {
		ig = workspace.Load(d.root, "")
	} else {
		ig = f.ignore(d, parentOf(dir))
		if data, err := workspace.ReadRegularIn(d.root, path.Join(dir, ".gitignore")); err == nil {
			ig = ig.With(dir, data)
		}
	}
	f.rules[k] = ig
	return ig
}
