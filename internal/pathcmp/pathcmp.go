// Package pathcmp compares clean absolute paths as this system resolves
// them. On Unix a name is its bytes. On Windows names match without
// regard to case, and without the dots and spaces Win32 drops from the
// end of a name (`secret.` and `SECRET ` open the file `secret`), so no
// other spelling of a path passes for another path. A leaf: it imports
// nothing of the project.
package pathcmp

import (
	"path/filepath"
	"strings"
)

// Inside reports whether p is dir or lies under it.
func Inside(p, dir string) bool { return inside(p, dir, filepath.Separator, fold) }

// Under reports whether p lies strictly under dir.
func Under(p, dir string) bool { return Inside(p, dir) && !Same(p, dir) }

// Same reports whether a and b name the same path.
func Same(a, b string) bool {
	if fold {
		return foldPath(a, filepath.Separator) == foldPath(b, filepath.Separator)
	}
	return a == b
}

// inside is Inside for paths with sep between names, folded as Windows
// folds them when fold is set. A dir that ends in sep is a root ("/",
// `C:\`), holding every path that starts with it.
func inside(p, dir string, sep byte, fold bool) bool {
	if fold {
		p, dir = foldPath(p, sep), foldPath(dir, sep)
	}
	if dir == "" {
		return false
	}
	if dir[len(dir)-1] == sep {
		return strings.HasPrefix(p, dir)
	}
	return p == dir || strings.HasPrefix(p, dir) && p[len(dir)] == sep
}

// foldPath is p as Windows matches it: each name without its trailing
// dots and spaces (but "." and ".."), in upper case.
func foldPath(p string, sep byte) string {
	names := strings.Split(p, string(sep))
	for i, n := range names {
		if n == "." || n == ".." {
			continue
		}
		if t := strings.TrimRight(n, ". "); t != "" {
			names[i] = t
		}
	}
	return strings.ToUpper(strings.Join(names, string(sep)))
}
