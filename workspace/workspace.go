// Package workspace knows the directories a session works in and the
// project's own configuration in them: AGENTS.md instructions and
// .gitignore rules (the settings files are config's); it watches them for changes
// (watch.go) and keeps the tool-output cache those changes invalidate
// (cache.go).
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Workspace is a session's directory plus the editor's additional
// directories, all absolute and existing.
type Workspace struct {
	Dir        string
	Additional []string
}

// Open checks the directories an editor named for a session.
func Open(dir string, additional []string) (*Workspace, error) {
	w := &Workspace{}
	for i, d := range append([]string{dir}, additional...) {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("workspace directory %q is not absolute: editors must send absolute paths", d)
		}
		fi, err := os.Stat(d)
		if err != nil {
			return nil, fmt.Errorf("workspace directory %s: %w", d, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("workspace directory %s is a file", d)
		}
		d = filepath.Clean(d)
		if i == 0 {
			w.Dir = d
		} else {
			w.Additional = append(w.Additional, d)
		}
	}
	return w, nil
}

// Dirs returns the session's directory and then the additional ones.
func (w *Workspace) Dirs() []string { return append([]string{w.Dir}, w.Additional...) }

// Doc is one instruction file.
type Doc struct {
	Path string
	Text string
}

// MaxDocBytes bounds one instruction file; the rest is cut with a note.
const MaxDocBytes = 32 << 10

// InstructionFiles are the names read as project instructions, in order.
var InstructionFiles = []string{"AGENTS.md"}

// ReadFunc reads the file name (a relative path) below the directory dir
// for bridle: confine.ProjectFiles.Read, which refuses links that lead out
// of dir, hidden paths and .env files. A file that does not exist is an
// error satisfying errors.Is(err, fs.ErrNotExist); one that is a .env
// file under another name (a link to it), ErrDotEnv.
type ReadFunc func(dir, name string) ([]byte, error)

// ErrDotEnv is why a file the repository provides for bridle was not
// read: it leads to a .env file, whose values are the user's secrets. A
// repository can commit AGENTS.md as a link to .env, which each user
// fills in, often in a directory above the session's, whose .env files
// the session's redactor does not know.
var ErrDotEnv = errors.New("bridle keeps the values of .env files from the model")

// Instructions returns the project's instruction files that apply to the
// session's directory: AGENTS.md in the repository's top directory (the
// nearest one holding .git) and in every directory down to Dir, outermost
// first, so that the nearer file has the last word. Each is read with
// read, confined to Dir for Dir's own file and to the repository's top for
// the files above it (a file there may be a link within the repository,
// never out of it). The files that exist but were not read come back as
// skipped, each error saying why.
func (w *Workspace) Instructions(read ReadFunc) (docs []Doc, skipped []error) {
	dirs := []string{w.Dir}
	for d := w.Dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			// No repository: only the session's directory counts.
			dirs = dirs[:1]
			break
		}
		d = parent
		dirs = append(dirs, d)
	}
	top := dirs[len(dirs)-1]
	for i := len(dirs) - 1; i >= 0; i-- {
		for _, name := range InstructionFiles {
			root, rel := top, filepath.Join(dirs[i], name)
			if i == 0 {
				root, rel = w.Dir, name
			} else if r, err := filepath.Rel(top, rel); err == nil {
				rel = r
			}
			data, err := read(root, rel)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			p := filepath.Join(dirs[i], name)
			if err != nil {
				skipped = append(skipped, fmt.Errorf("%s not read: %w", p, err))
				if errors.Is(err, ErrDotEnv) {
					// Said in its place, so the model does not look for it.
					docs = append(docs, Doc{Path: p, Text: "[left out: " + err.Error() + "]"})
				}
				continue
			}
			text := string(data)
			if len(text) > MaxDocBytes {
				text = text[:MaxDocBytes] + fmt.Sprintf("\n[%s cut at %d bytes of %d]\n", name, MaxDocBytes, len(data))
			}
			docs = append(docs, Doc{Path: p, Text: strings.TrimSpace(text)})
		}
	}
	return docs, skipped
}

// Render joins instruction documents for the system prompt, each under a
// heading naming its file.
func Render(docs []Doc) string {
	var b strings.Builder
	for i, d := range docs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "# Instructions from %s\n\n%s", d.Path, d.Text)
	}
	return b.String()
}
