package confine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/workspace"
)

// ProjectFiles reads the files a repository provides for bridle itself
// (its AGENTS.md files, its .bridle/settings.json) the way the file tools
// read the workspace: a repository that makes AGENTS.md a symbolic link
// to ~/.netrc or /proc/self/environ would otherwise put the file in every
// request. The zero value hides nothing but confines all the same.
type ProjectFiles struct {
	// Hidden and Own are the paths Root.Hide and Root.HideOwn take: the
	// same lists as the session's file tools.
	Hidden, Own []string
}

// Read reads name (a path relative to dir) below the directory dir
// through a Root at dir: no "..", no symbolic link that leads out of dir
// (as the file or as any directory on the way), not a hidden path nor in
// one, a regular file (opened without waiting) with no other hard link,
// and not a .env file under another name (workspace.ErrDotEnv). It reads at most workspace.MaxProjectFile bytes. A file that does not
// exist is an error satisfying errors.Is(err, fs.ErrNotExist); any other
// error says why the file was not read.
func (p ProjectFiles) Read(dir, name string) ([]byte, error) {
	r, err := OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	r.Hide(p.Hidden...)
	r.HideOwn(p.Own...)
	// Root.Open's errors are worded for the model; a missing file is
	// told apart here, through the same os.Root.
	if _, err := r.dirs[0].root.Lstat(name); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), fs.ErrNotExist)
	}
	f, _, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if target := targetOf(f, filepath.Join(dir, name)); redact.DotEnvName(filepath.Base(target)) {
		return nil, fmt.Errorf("%s is a link to the .env file %s: %w", filepath.Join(dir, name), target, workspace.ErrDotEnv)
	}
	return io.ReadAll(io.LimitReader(f, workspace.MaxProjectFile))
}

// targetOf returns where the file open as f, opened by path, is: through
// every link on the way. Read from the open file where the OS says, so a
// link swapped after the open cannot pass for another file.
func targetOf(f *os.File, path string) string {
	if p, ok := fdPath(f); ok {
		return p
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return path
}
