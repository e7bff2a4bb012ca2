package workspace

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Ignore matches paths against .gitignore rules. It is immutable: With
// returns a new matcher, so a directory walk can extend it per directory
// and drop the extension when it leaves.
type Ignore struct {
	rules []rule
}

type rule struct {
	base    string // directory of the .gitignore, slash-separated, "" for the top
	pattern string // doublestar pattern, relative to base when anchored
	negate  bool
	dirOnly bool
	// anchored patterns match the path relative to base; the others
	// match the last element at any depth.
	anchored bool
}

// With returns ig extended by the rules of a .gitignore file found in dir
// (slash-separated, relative to the walk's top; "" for the top).
func (ig *Ignore) With(dir string, data []byte) *Ignore {
	var add []rule
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if r, ok := parseRule(dir, sc.Text()); ok {
			add = append(add, r)
		}
	}
	if len(add) == 0 {
		return ig
	}
	n := &Ignore{}
	if ig != nil {
		n.rules = append(n.rules, ig.rules...)
	}
	n.rules = append(n.rules, add...)
	return n
}

func parseRule(base, line string) (rule, bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are ignored unless escaped.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" || strings.HasPrefix(line, "#") {
		return rule{}, false
	}
	r := rule{base: base}
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, "\\!") || strings.HasPrefix(line, "\\#") {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return rule{}, false
	}
	// A slash at the start or in the middle anchors the pattern to the
	// .gitignore's directory.
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
	}
	// gitignore has no brace expansion; doublestar does.
	line = strings.NewReplacer("{", "\\{", "}", "\\}").Replace(line)
	r.pattern = line
	return r, true
}

// Match reports whether the slash-separated path rel (relative to the
// walk's top) is ignored. The last matching rule wins.
func (ig *Ignore) Match(rel string, isDir bool) bool {
	if ig == nil {
		return false
	}
	ignored := false
	for _, r := range ig.rules {
		if r.dirOnly && !isDir {
			continue
		}
		if r.match(rel) {
			ignored = !r.negate
		}
	}
	return ignored
}

func (r rule) match(rel string) bool {
	if r.base != "" {
		if !strings.HasPrefix(rel, r.base+"/") {
			return false
		}
		rel = rel[len(r.base)+1:]
	}
	if !r.anchored {
		ok, _ := doublestar.Match(r.pattern, path.Base(rel))
		return ok
	}
	ok, _ := doublestar.Match(r.pattern, rel)
	return ok
}

// Load returns the rules that apply inside dir (slash-separated, relative
// to root): .git/info/exclude and the .gitignore files of the top and of
// every directory down to dir, read through root (ReadRegularIn).
func Load(root *os.Root, dir string) *Ignore {
	var ig *Ignore
	if data, err := ReadRegularIn(root, ".git/info/exclude"); err == nil {
		ig = ig.With("", data)
	}
	cur := ""
	parts := []string{""}
	if dir != "" && dir != "." {
		parts = append(parts, strings.Split(dir, "/")...)
	}
	for i, p := range parts {
		if i > 0 {
			cur = path.Join(cur, p)
		}
		if data, err := ReadRegularIn(root, path.Join(cur, ".gitignore")); err == nil {
			ig = ig.With(cur, data)
		}
	}
	return ig
}
