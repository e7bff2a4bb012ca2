package redact

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/workspace"
)

// A workspace's .env files are found once, when its first session opens,
// and kept current by the file watcher (DotEnvs): session start never
// walks the tree. What the redactor takes from them is bounded, so that a
// repository holding millions of .env files, or huge ones, cannot make
// bridle hold them all nor compare every text with them all.
const (
	// dotEnvMax bounds what is read of one .env file, and of a .gitignore.
	dotEnvMax = 1 << 20
	// maxDotEnvFiles bounds the .env files listed: past it, those deepest
	// in the tree are forgotten first.
	maxDotEnvFiles = 10000
	// maxDotEnvLines bounds the assignments taken from a workspace's .env
	// files, shallowest first: each value is compared with every text
	// redacted (1,000 values slow the redaction of a 100 KB output to a
	// few hundred milliseconds).
	maxDotEnvLines = 1000
	// maxDotEnvBytes bounds the bytes taken from them.
	maxDotEnvBytes = 4 << 20
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

// Watching is what DotEnvs needs of a file watcher (workspace.Watcher)
// whose Pick is DotEnvName and whose Found is DotEnvs.Found.
type Watching interface {
	// Sync returns once every change made before it was called has been
	// passed to Found, the first walk included.
	Sync(ctx context.Context) error
	// Degraded says why not every directory is watched ("" when all are).
	Degraded() string
}

// DotEnvs is the list of the .env files below a workspace's directories
// and what they hold, shared by every session on that workspace in the
// process. A watcher's walk finds them and its events keep the list
// current (Watch); without a watcher, or one that cannot watch every
// directory, Current walks the tree itself each time. Links are never
// followed, nor FIFOs waited on; .git, node_modules and the directories
// .gitignore ignores are skipped (not the .env files it ignores: they
// always count). Safe for concurrent use.
type DotEnvs struct {
	dirs []string

	mu    sync.Mutex
	watch Watching
	// files are the .env files listed, by absolute path.
	files map[string]*dotEnvFile
	// forgot counts the files forgotten past maxDotEnvFiles (a file
	// found again counts again); last is the
	// last file kept then: while the list is that full, a file after it
	// is forgotten at once (a flood of deep files costs a comparison each).
	forgot int
	last   dotEnvFile
	// former holds what files held before they changed or went away,
	// newest last: a value moved out of a .env file stays redacted.
	former []DotEnv
	// set is the last answer of Current, rebuilt when changed is set.
	set     DotEnvSet
	changed bool
	// walking keeps the walks of Current one at a time.
	walking sync.Mutex
}

// dotEnvFile is one listed .env file.
type dotEnvFile struct {
	dir   int    // its directory in DotEnvs.dirs
	rel   string // slash path below it: the name in the markers
	depth int    // the directories in rel
	vers  string // workspace.VersionOf when data was read; "" unread
	data  []byte // what is taken of it (nil: nothing, or past the bounds)
	n     int    // the assignments in data
	// cut says data is only the start of the file: the bounds left
	// lines and size for it.
	cut         bool
	lines, size int
}

// DotEnv is one .env file's contents as the redactor takes them
// (AddDotEnv).
type DotEnv struct {
	Name string
	Data []byte
}

// DotEnvSet is a workspace's .env files, as a redactor is built from.
type DotEnvSet struct {
	// Version changes whenever Files does.
	Version uint64
	// Files are the current files, shallowest first, then what files
	// held before they changed or went away, newest first.
	Files []DotEnv
	// Left says what was left out at the bounds ("" when nothing was).
	Left string
}

// NewDotEnvs returns the list of the .env files below dirs (absolute),
// empty until a watcher's walk fills it (Watch) or Current walks.
func NewDotEnvs(dirs []string) *DotEnvs {
	return &DotEnvs{dirs: slices.Clone(dirs), files: map[string]*dotEnvFile{}, changed: true}
}

// Watch makes w, whose Found is d.Found, keep the list current.
func (d *DotEnvs) Watch(w Watching) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.watch = w
}

// Found is the watcher's Found: p is a .env file that a walk found or an
// event named (created, written, removed), or a directory removed (the
// files below it are looked at again by the next Current anyway).
func (d *DotEnvs) Found(p string) {
	if !DotEnvName(filepath.Base(p)) {
		return
	}
	dir, rel, ok := d.locate(p)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.add(p, dir, rel)
}

// locate finds the directory p is below and its slash path there.
func (d *DotEnvs) locate(p string) (int, string, bool) {
	for i, dir := range d.dirs {
		rel, err := filepath.Rel(dir, p)
		if err == nil && rel != "." && filepath.IsLocal(rel) {
			return i, filepath.ToSlash(rel), true
		}
	}
	return 0, "", false
}

// add lists a file; d.mu is held. Past maxDotEnvFiles the deepest tenth
// is forgotten, so the list always holds the shallowest files found.
func (d *DotEnvs) add(p string, dir int, rel string) {
	if _, ok := d.files[p]; ok {
		return
	}
	f := &dotEnvFile{dir: dir, rel: rel, depth: strings.Count(rel, "/")}
	keep := maxDotEnvFiles * 9 / 10
	if d.forgot > 0 && len(d.files) >= keep && compareFiles(f, &d.last) > 0 {
		d.forgot++
		return
	}
	d.files[p] = f
	d.changed = true
	if len(d.files) <= maxDotEnvFiles {
		return
	}
	order := d.ordered()
	d.last = *d.files[order[keep-1]]
	for _, p := range order[keep:] {
		if f := d.files[p]; f.data != nil {
			d.keepFormer(DotEnv{f.rel, f.data})
		}
		delete(d.files, p)
		d.forgot++
	}
}

// ordered returns the listed paths, shallowest first, then by name.
func (d *DotEnvs) ordered() []string {
	paths := make([]string, 0, len(d.files))
	for p := range d.files {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, func(a, b string) int { return compareFiles(d.files[a], d.files[b]) })
	return paths
}

// compareFiles orders files shallowest first, then by name.
func compareFiles(a, b *dotEnvFile) int {
	return cmp.Or(cmp.Compare(a.depth, b.depth), strings.Compare(a.rel, b.rel), cmp.Compare(a.dir, b.dir))
}

// Current returns the workspace's .env files as they are now: every
// change made before the call counts. It waits for the watcher's first
// walk (ctx bounds the wait); without a watcher that sees every
// directory it walks the tree.
func (d *DotEnvs) Current(ctx context.Context) (DotEnvSet, error) {
	d.mu.Lock()
	w := d.watch
	d.mu.Unlock()
	walk := w == nil || w.Degraded() != ""
	if !walk {
		if err := w.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				return DotEnvSet{}, err
			}
			walk = true // the watcher is closed or cannot sync
		}
	}
	if walk {
		if err := d.walk(ctx); err != nil {
			return DotEnvSet{}, err
		}
	}
	roots := make([]*os.Root, len(d.dirs))
	for i, dir := range d.dirs {
		if r, err := os.OpenRoot(dir); err == nil {
			roots[i] = r
			defer r.Close()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refresh(roots)
	if d.changed {
		d.set = d.build()
		d.changed = false
	}
	return d.set, nil
}

// walk lists the .env files below every directory, for Current without
// a watcher.
func (d *DotEnvs) walk(ctx context.Context) error {
	d.walking.Lock()
	defer d.walking.Unlock()
	for _, dir := range d.dirs {
		err := walkDotEnvs(ctx, dir, func(rel string) { d.Found(filepath.Join(dir, filepath.FromSlash(rel))) })
		if err != nil {
			return err
		}
	}
	return nil
}

// refresh reads again, in order, every listed file that changed since it
// was read, while the bounds allow: the files past them are not held.
// d.mu is held.
func (d *DotEnvs) refresh(roots []*os.Root) {
	lines, size := maxDotEnvLines, maxDotEnvBytes
	for _, p := range d.ordered() {
		f := d.files[p]
		root := roots[f.dir]
		var fi fs.FileInfo
		err := fs.ErrNotExist
		if root != nil {
			fi, err = root.Lstat(filepath.FromSlash(f.rel))
		}
		if err != nil || !fi.Mode().IsRegular() {
			// Gone, or not a file (a link, a FIFO): not read, and not
			// listed until an event names it again.
			if f.data != nil {
				d.keepFormer(DotEnv{f.rel, f.data})
			}
			delete(d.files, p)
			d.changed = true
			continue
		}
		if lines <= 0 || size <= 0 {
			if f.vers != "" {
				f.data, f.n, f.vers = nil, 0, ""
				d.changed = true
			}
			continue
		}
		v := workspace.VersionOf(fi)
		if v != f.vers || f.n > lines || len(f.data) > size || f.cut && (f.lines != lines || f.size != size) {
			data, cut := readDotEnv(root, f.rel, lines, size)
			if !bytes.Equal(data, f.data) {
				if f.data != nil {
					d.keepFormer(DotEnv{f.rel, f.data})
				}
				f.data, f.n = data, assignments(data)
				d.changed = true
			}
			f.vers, f.cut, f.lines, f.size = v, cut, lines, size
		}
		lines -= f.n
		size -= len(f.data)
	}
}

// keepFormer keeps what a file held, within the bounds, once (the
// latest name); d.mu is held.
func (d *DotEnvs) keepFormer(e DotEnv) {
	d.former = slices.DeleteFunc(d.former, func(f DotEnv) bool { return bytes.Equal(f.Data, e.Data) })
	d.former = append(d.former, e)
	lines, size := 0, 0
	for i := len(d.former) - 1; i >= 0; i-- {
		lines += assignments(d.former[i].Data)
		size += len(d.former[i].Data)
		if lines > maxDotEnvLines || size > maxDotEnvBytes {
			d.former = slices.Delete(d.former, 0, i+1)
			break
		}
	}
	d.changed = true
}

// build makes the set Current returns; d.mu is held.
func (d *DotEnvs) build() DotEnvSet {
	set := DotEnvSet{Version: d.set.Version + 1}
	lines, size := maxDotEnvLines, maxDotEnvBytes
	var left []string
	for _, p := range d.ordered() {
		f := d.files[p]
		if f.data != nil {
			set.Files = append(set.Files, DotEnv{f.rel, f.data})
			lines -= f.n
			size -= len(f.data)
		}
		if f.cut || f.vers == "" {
			left = append(left, f.rel)
		}
	}
	for i := len(d.former) - 1; i >= 0; i-- {
		e := d.former[i]
		if slices.ContainsFunc(set.Files, func(f DotEnv) bool { return bytes.Equal(f.Data, e.Data) }) {
			continue // still held by a file: moved, or changed back
		}
		n := assignments(e.Data)
		if n > lines || len(e.Data) > size {
			break
		}
		set.Files = append(set.Files, e)
		lines -= n
		size -= len(e.Data)
	}
	var why []string
	if len(left) > 0 {
		why = append(why, fmt.Sprintf("%d .env file(s) past bridle's bound of %d assignments (%d KiB) are not read whole: %s",
			len(left), maxDotEnvLines, maxDotEnvBytes>>10, strings.Join(left[:min(len(left), 3)], ", ")))
	}
	if slices.Contains(d.dirs, string(filepath.Separator)) {
		why = append(why, "the workspace is the whole file system (/): only the .env files directly in / are read")
	}
	if d.forgot > 0 {
		why = append(why, fmt.Sprintf("the workspace holds more than %d .env files: the deepest were not listed", maxDotEnvFiles))
	}
	set.Left = strings.Join(why, "; ")
	return set
}

// assignments counts the lines of a .env file that may assign a value.
func assignments(data []byte) int {
	n := 0
	for line := range bytes.Lines(data) {
		if bytes.IndexByte(line, '=') >= 0 {
			n++
		}
	}
	return n
}

// readDotEnv reads a .env file below root, of at most the given
// assignments and bytes (and dotEnvMax): a longer file is cut after its
// last whole line that fits, and cut says so. It opens without waiting
// and checks the type on the open file, so a FIFO or device renamed over
// it is refused, never waited on; os.Root keeps a link from leading out.
func readDotEnv(root *os.Root, rel string, lines, size int) (data []byte, cut bool) {
	data, err := workspace.ReadRegularInN(root, rel, int64(min(size, dotEnvMax)+1))
	if err != nil {
		return nil, false
	}
	if len(data) > min(size, dotEnvMax) {
		data, cut = data[:min(size, dotEnvMax)], true
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i+1]
		} else {
			data = nil
		}
	}
	end := 0
	for line := range bytes.Lines(data) {
		if bytes.IndexByte(line, '=') >= 0 {
			if lines == 0 {
				return data[:end], true
			}
			lines--
		}
		end += len(line)
	}
	return data, cut
}

// walkDotEnvs calls found with the slash path of each .env file below dir.
// It skips .git, node_modules and the directories .gitignore ignores, never
// follows a symbolic link and opens directories without waiting. A walk of
// the whole file system (dir is /, or a Windows volume's root) looks only
// at its top.
func walkDotEnvs(ctx context.Context, dir string, found func(rel string)) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil
	}
	defer root.Close()
	type todo struct {
		rel string
		ig  *workspace.Ignore
	}
	var ig *workspace.Ignore
	if data, err := readSmall(root, ".git/info/exclude"); err == nil {
		ig = ig.With("", data)
	}
	stack := []todo{{".", ig}}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
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
		for _, e := range entries {
			n := e.Name()
			rel := path.Join(d.rel, n)
			switch {
			case e.Type().IsRegular() && DotEnvName(n):
				found(rel)
			case e.IsDir() && filepath.Dir(dir) != dir: // not the whole file system; a symbolic link to a directory is not one
				if n == ".git" || n == "node_modules" || d.ig.Match(rel, true) {
					continue
				}
				stack = append(stack, todo{rel, d.ig})
			}
		}
	}
	return nil
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

// readSmall reads a regular file below root of at most dotEnvMax bytes
// (a larger one is refused).
func readSmall(root *os.Root, name string) ([]byte, error) {
	data, err := workspace.ReadRegularInN(root, name, dotEnvMax+1)
	if err == nil && len(data) > dotEnvMax {
		return nil, fs.ErrInvalid
	}
	return data, err
}
