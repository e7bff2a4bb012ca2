package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bridle-dev/bridle/internal/fileid"
	"github.com/bridle-dev/bridle/internal/pathcmp"
)

// CredentialStores are where the usual tools keep the user's credentials,
// relative to the home directory. Commands see an empty directory (or an
// empty file) in their place, and the file tools refuse them, unless the
// user's settings name them in sandbox.command.visible_paths.
var CredentialStores = append([]string{
	".ssh", ".aws", ".config/gcloud", ".azure", ".kube", ".docker/config.json",
	".netrc", ".gnupg", ".password-store",
}, osCredentialStores...)

// hiddenBy returns the hidden path that abs is, or lies under; "" if none.
func hiddenBy(hidden []string, abs string) string {
	for _, h := range hidden {
		if pathcmp.Inside(abs, h) {
			return h
		}
	}
	return ""
}

// Why a path is hidden decides what the refusal says.
type hiddenWhy int

const (
	hiddenListed     hiddenWhy = iota // the user's settings' hidden_paths
	hiddenCredential                  // a credential store under home
	hiddenOwn                         // bridle's own settings, database, artifacts, cache
)

// fileID is a file's identity: what it is, whatever its name.
type fileID = fileid.ID

// hiddenPath is one entry of a Root's hidden list.
type hiddenPath struct {
	path string // clean and absolute, as given
	// real is path with the symbolic links of its existing part
	// resolved, when that differs ("" otherwise): what /proc/self/fd
	// says of a file inside it.
	real string
	why  hiddenWhy
	// id is the identity it had when it was hidden, if it existed: it
	// stays hidden when renamed.
	id    fileID
	hasID bool
}

// ErrHiddenPath is what every refusal of a hidden path is (errors.Is).
var ErrHiddenPath = errors.New("hidden path")

type hiddenError struct{ msg string }

func (e *hiddenError) Error() string        { return e.msg }
func (e *hiddenError) Is(target error) bool { return target == ErrHiddenPath }

// refuse is the error a tool gets for path (as the model gave it), which
// is h or lies inside it.
func (h *hiddenPath) refuse(path string) error {
	switch h.why {
	case hiddenOwn:
		return &hiddenError{fmt.Sprintf("%s is bridle's own file (%s: its settings, database, artifacts or cache), hidden from the agent: no tool may read or write it, and no setting can make bridle's own files visible", path, h.path)}
	case hiddenCredential:
		return &hiddenError{fmt.Sprintf("%s is a credential store (%s), hidden from the agent: no tool may read or write it; the user's settings sandbox.command.visible_paths can make a credential store visible", path, h.path)}
	}
	return &hiddenError{fmt.Sprintf("%s is hidden from the agent by the user's settings (sandbox.command.hidden_paths: %s): no tool may read or write it", path, h.path)}
}

// isCredentialStore reports whether p is one of the credential stores
// under the user's home, as HiddenPaths lists them.
func isCredentialStore(p string) bool {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return false
	}
	for _, s := range CredentialStores {
		if p == filepath.Join(home, s) {
			return true
		}
	}
	return false
}

// resolveExisting resolves the symbolic links in the longest existing
// part of the absolute path p and keeps the rest as it is.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// statID is the identity of the file at p, following a final link.
func statID(p string) (fileID, bool) { return fileid.Stat(p) }

// entryID is the identity of the entry at p, which a stat or a directory
// listing described as fi, without following a final link: from fi where
// it carries it (Unix), else from the entry by its path (Windows).
func entryID(p string, fi fs.FileInfo) (fileID, bool) {
	if id, ok := fileid.FromInfo(fi); ok {
		return id, true
	}
	return fileid.Lstat(p)
}

// openedID is the identity of the open file f, whose Stat is fi: from fi
// where it carries it (Unix), else from f's handle (Windows).
func openedID(f *os.File, fi fs.FileInfo) (fileID, bool) {
	if id, ok := fileid.FromInfo(fi); ok {
		return id, true
	}
	return fileid.Of(f)
}

// openedLinks is the number of hard links of the open file f, whose Stat
// is fi, as openedID reads it.
func openedLinks(f *os.File, fi fs.FileInfo) (uint64, bool) {
	if n, ok := fileid.LinksFromInfo(fi); ok {
		return n, true
	}
	return fileid.Links(f)
}

// A guard is the hidden list as one tool call checks it: the paths, and
// the identity of every hidden file or directory that exists, taken when
// the call starts and when the path was hidden.
//
// The file tools check what they actually opened, never a name: a name
// can be a symbolic link, go through "..", or be swapped for a link or
// another directory between a check and a use. So:
//   - the opened file's or directory's (dev, inode), and every ancestor's
//     up to "/" (reached through ".." from the opened descriptor, which
//     follows the directory itself, not a name), must not be a hidden
//     path's: this holds when a hidden directory (or a directory above
//     it) has been renamed, and costs three system calls per level;
//   - the opened file's real path (readlink of /proc/self/fd/N, the
//     kernel's name for that very file) must not be or lie in a hidden
//     path: this covers hidden paths that did not exist when the call
//     started, such as a settings file not created yet;
//   - a file is created only in a directory that passed both checks,
//     through that directory's descriptor, so a swap after the check
//     cannot move the write elsewhere.
//
// Walks (grep, glob) check each directory's identity when they open it
// (one fstat) and each file's identity from its directory entry (no
// system call), and read files through the descriptor of the directory
// that was checked.
type guard struct {
	hidden []hiddenPath
	ids    map[fileID]*hiddenPath
}

// guard returns the hidden list as a call checks it; nil when nothing is
// hidden (every check on a nil guard passes).
func (r *Root) guard() *guard {
	if len(r.marks) == 0 {
		return nil
	}
	g := &guard{hidden: r.marks, ids: make(map[fileID]*hiddenPath, 2*len(r.marks))}
	for i := range r.marks {
		h := &r.marks[i]
		if h.hasID {
			g.ids[h.id] = h
		}
		if id, ok := statID(h.path); ok {
			g.ids[id] = h
		}
	}
	return g
}

// byPath returns the hidden path that abs (absolute and clean) is or
// lies in.
func (g *guard) byPath(abs string) *hiddenPath {
	if g == nil || abs == "" {
		return nil
	}
	for i := range g.hidden {
		h := &g.hidden[i]
		if hiddenBy([]string{h.path}, abs) != "" || h.real != "" && hiddenBy([]string{h.real}, abs) != "" {
			return h
		}
	}
	return nil
}

func (g *guard) byID(id fileID) *hiddenPath {
	if g == nil {
		return nil
	}
	return g.ids[id]
}

// below returns the hidden paths that lie strictly below the directory
// real, relative to it as slash paths: what a walk of it must skip.
func (g *guard) below(real string) map[string]*hiddenPath {
	if g == nil || real == "" {
		return nil
	}
	out := map[string]*hiddenPath{}
	for i := range g.hidden {
		h := &g.hidden[i]
		for _, p := range []string{h.path, h.real} {
			if p == "" {
				continue
			}
			if rel, err := filepath.Rel(real, p); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				out[filepath.ToSlash(rel)] = h
			}
		}
	}
	return out
}

// checkDir checks the directory open as dir (its identity, its
// ancestors', its real path) and returns its real path ("" when the OS
// cannot tell) for the names below it.
func (g *guard) checkDir(dir *os.File) (*hiddenPath, string, error) {
	if g == nil {
		return nil, "", nil
	}
	real, _ := fdPath(dir)
	if h := g.byPath(real); h != nil {
		return h, real, nil
	}
	h, err := g.dirChain(dir, real)
	return h, real, err
}

// checkFile checks the file (not a directory) open as f, whose absolute
// path as the model named it is lexical: its identity, its real path, and
// its directory's identity and ancestors. The directory is found from the
// real path and proved to hold this very file before its chain is
// walked.
func (g *guard) checkFile(f *os.File, lexical string) (*hiddenPath, error) {
	if g == nil {
		return nil, nil
	}
	id, _ := fileid.Of(f)
	if h := g.byID(id); h != nil {
		return h, nil
	}
	real, ok := fdPath(f)
	if !ok {
		// No /proc: the name the model gave stands for the real path,
		// and a file reached through a symbolic link cannot be proved
		// to be in the directory below, so it is refused.
		real = lexical
	}
	if h := g.byPath(real); h != nil {
		return h, nil
	}
	return g.fileChain(id, real, ok)
}
