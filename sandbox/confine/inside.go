package confine

import (
	"path/filepath"
	"strings"
)

// inside reports whether the clean absolute path p is dir or lies under
// it, as this system compares names (see pathInside).
func inside(p, dir string) bool { return pathInside(p, dir, filepath.Separator, foldNames) }

// pathInside reports whether p is dir or lies under it, both clean and
// absolute with sep between names. A dir that ends in sep is a root ("/",
// `C:\`), holding every path that starts with it. With fold, names
// compare as Windows compares them: without regard to case, and without
// the dots and spaces Win32 drops from the end of a name (`secret.` and
// `SECRET ` name the file `secret`), so no spelling of a hidden path
// passes for another path.
func pathInside(p, dir string, sep byte, fold bool) bool {
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

// foldPath is p as Windows matches it: each name without its trailing dots
// and spaces (but "." and ".."), in upper case.
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

// dosPath turns the \\?\ form of a path GetFinalPathNameByHandle gives
// into the form the model and the settings use (\\?\C:\x → C:\x,
// \\?\UNC\s\x → \\s\x); false when the result is not an absolute
// Windows path (a volume GUID path, say).
func dosPath(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, `\\?\UNC\`):
		p = `\\` + p[len(`\\?\UNC\`):]
	case strings.HasPrefix(p, `\\?\`):
		p = p[len(`\\?\`):]
	}
	drive := len(p) >= 3 && p[1] == ':' && p[2] == '\\' && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z')
	unc := len(p) > 2 && strings.HasPrefix(p, `\\`) && p[2] != '?' && p[2] != '.'
	if !drive && !unc {
		return "", false
	}
	return p, true
}
