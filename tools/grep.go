package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// Grep searches file contents with a regular expression, skipping what
// .gitignore ignores, binary files and very large files.
type Grep struct {
	declared[Grep]
	// MaxMatches caps the matches shown; all of them go to an artifact.
	MaxMatches int
	// MaxLineLen cuts long matching lines.
	MaxLineLen int
	// MaxFileBytes skips larger files (they are counted).
	MaxFileBytes int64
}

func (Grep) spec() *toolSpec { return &grepSpec }

var grepSpec = newSpec[grepInput]("grep", KindSearch, permission.EffectRead)

type grepInput struct {
	Pattern    string `json:"pattern" jsonschema:"regular expression (RE2 syntax)" check:"minLength=1"`
	Path       string `json:"path,omitempty" jsonschema:"directory or file to search (default: the workspace)"`
	Glob       string `json:"glob,omitempty" jsonschema:"only files whose path matches this glob, e.g. \"*.go\" or \"src/**/*.ts\""`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"match case-insensitively"`
	FilesOnly  bool   `json:"files_only,omitempty" jsonschema:"list matching files with their match counts instead of lines"`
}

func (t Grep) Description() string {
	return grepSpec.doc.render(struct{ MaxMatches int }{t.maxMatches()})
}

func (t Grep) maxMatches() int     { return orDefault(t.MaxMatches, 200) }
func (t Grep) maxLineLen() int     { return orDefault(t.MaxLineLen, 300) }
func (t Grep) maxFileBytes() int64 { return int64(orDefault(int(t.MaxFileBytes), 16<<20)) }

func (t Grep) compile(in grepInput) (*regexp.Regexp, error) {
	p := in.Pattern
	if in.IgnoreCase {
		p = "(?i)" + p
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("grep: %q is not a valid RE2 regular expression: %v", in.Pattern, err)
	}
	if in.Glob != "" && !doublestar.ValidatePattern(in.Glob) {
		return nil, fmt.Errorf("grep: glob %q is not a valid pattern", in.Glob)
	}
	return re, nil
}

func (t Grep) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[grepInput](env, t.Name(), grepSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	if _, err := t.compile(in); err != nil {
		return Preview{}, err
	}
	return Preview{Title: "Search " + in.Pattern, Locations: []Location{{Path: env.Root.Abs(orDot(in.Path))}}}, nil
}

type fileMatches struct {
	path  string
	lines []string
	count int
}

type grepStats struct {
	mu                           sync.Mutex
	files                        []fileMatches
	binary, large, linked, unred int
}

func (t Grep) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[grepInput](env, t.Name(), grepSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	re, err := t.compile(in)
	if err != nil {
		return Errorf("%v", err)
	}
	dir := orDot(in.Path)
	st := &grepStats{}
	// A single file is searched directly.
	if fi, err := env.Root.Lstat(dir); err == nil && fi.Mode().IsRegular() {
		data, err := env.Root.ReadFile(dir, t.maxFileBytes())
		if err != nil {
			return Errorf("grep: %v", err)
		}
		t.search(env, data, dir, re, in.FilesOnly, st)
	} else {
		if err := t.walk(ctx, env, dir, in, re, st); err != nil {
			return Errorf("grep: %v", err)
		}
	}
	sort.Slice(st.files, func(i, j int) bool { return st.files[i].path < st.files[j].path })
	total := 0
	for _, f := range st.files {
		total += f.count
	}
	c := newCapture(env, Caps{HeadLines: t.maxMatches(), HeadBytes: 64 << 10})
	for _, f := range st.files {
		if in.FilesOnly {
			fmt.Fprintf(c, "%s: %d\n", f.path, f.count)
			continue
		}
		for _, l := range f.lines {
			c.WriteString(l)
		}
	}
	res := c.Finish()
	var b strings.Builder
	noun := "matches"
	if total == 1 {
		noun = "match"
	}
	fmt.Fprintf(&b, "%d %s in %d files", total, noun, len(st.files))
	var skipped []string
	if st.binary > 0 {
		skipped = append(skipped, fmt.Sprintf("%d binary", st.binary))
	}
	if st.large > 0 {
		skipped = append(skipped, fmt.Sprintf("%d over %d bytes", st.large, t.maxFileBytes()))
	}
	if st.linked > 0 {
		skipped = append(skipped, fmt.Sprintf("%d hard-linked", st.linked))
	}
	if st.unred > 0 {
		skipped = append(skipped, fmt.Sprintf("%d unreadable", st.unred))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, " (skipped files: %s)", strings.Join(skipped, ", "))
	}
	b.WriteString("\n")
	b.WriteString(res.Output)
	res.Output = b.String()
	res.Locations = []Location{{Path: env.Root.Abs(dir)}}
	return res
}

func (t Grep) walk(ctx context.Context, env *Env, dir string, in grepInput, re *regexp.Regexp, st *grepStats) error {
	tree, err := env.Root.OpenTree(dir)
	if err != nil {
		return err
	}
	defer tree.Close()
	jobs := make(chan confine.File, 256)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for f := range jobs {
				data, err := tree.Read(f, t.maxFileBytes())
				f.Release()
				st.mu.Lock()
				switch {
				case errors.Is(err, confine.ErrHidden):
					// Not searched, not counted: as if it were not there.
				case errors.Is(err, confine.ErrLinked):
					st.linked++
				case errors.Is(err, confine.ErrTooLarge):
					st.large++
				case err != nil:
					st.unred++
				}
				st.mu.Unlock()
				if err == nil {
					t.search(env, data, joinRel(dir, f.Rel), re, in.FilesOnly, st)
				}
			}
		})
	}
	glob := strings.TrimPrefix(in.Glob, "./")
	err = tree.Walk(ctx, func(f confine.File) error {
		rel := f.Rel
		if glob != "" {
			ok, _ := doublestar.Match(glob, rel)
			if !ok && !strings.Contains(glob, "/") {
				ok, _ = doublestar.Match(glob, path.Base(rel))
			}
			if !ok {
				return nil
			}
		}
		f.Hold() // released by the worker that reads it
		jobs <- f
		return nil
	})
	close(jobs)
	wg.Wait()
	return err
}

// search looks for re in one file's content and records what it found.
func (t Grep) search(env *Env, data []byte, name string, re *regexp.Regexp, filesOnly bool, st *grepStats) {
	skip := func(n *int) {
		st.mu.Lock()
		*n++
		st.mu.Unlock()
	}
	if bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0 {
		skip(&st.binary)
		return
	}
	if !re.Match(data) {
		return
	}
	// Redact the whole file before looking at lines: a key block is only
	// recognised whole, and a secret must go before a long line is cut.
	// Redaction keeps the line count, so line numbers stay right.
	data = []byte(env.redact(string(data)))
	fm := fileMatches{path: name}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		i := bytes.IndexByte(data, '\n')
		var line []byte
		if i < 0 {
			line, data = data, nil
		} else {
			line, data = data[:i], data[i+1:]
		}
		if !re.Match(line) {
			continue
		}
		fm.count++
		if !filesOnly {
			text := strings.TrimRight(string(line), "\r")
			if len(text) > t.maxLineLen() {
				text = cutUTF8(text, t.maxLineLen()) + " […]"
			}
			fm.lines = append(fm.lines, fmt.Sprintf("%s:%d:%s\n", name, lineNo, text))
		}
	}
	if fm.count > 0 {
		st.mu.Lock()
		st.files = append(st.files, fm)
		st.mu.Unlock()
	}
}
