package extend

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bridle-dev/bridle/sandbox/confine"
)

// Folder is a directory skills or commands are read from.
type Folder struct {
	// Root is the directory every read is confined to (confine.Root): the
	// session's directory for the project's folders, the folder itself
	// for the user's.
	Root string
	// Path is the folder, relative to Root ("." for Root itself).
	Path string
	// Project says the folder is the repository's, not the user's.
	Project bool
	// Hidden and Own are the paths Root.Hide and Root.HideOwn take (the
	// session's file tools' lists).
	Hidden, Own []string
}

// Show is the folder as the user reads it: its absolute path.
func (f Folder) Show() string { return filepath.Join(f.Root, f.Path) }

// Whose names the folder's owner for the user: "project" or "user".
func (f Folder) Whose() string {
	if f.Project {
		return "project"
	}
	return "user"
}

// maxEntries bounds the entries of one folder that are looked at: a
// repository cannot make bridle open thousands of files.
const maxEntries = 256

// open opens the folder's Root, with its hidden paths.
func (f Folder) open() (*confine.Root, error) {
	r, err := confine.OpenRoot(f.Root)
	if err != nil {
		return nil, err
	}
	r.Hide(f.Hidden...)
	r.HideOwn(f.Own...)
	return r, nil
}

// entries lists the folder's entries (sorted by name), at most
// maxEntries; none and no error when it does not exist.
func (f Folder) entries(r *confine.Root) ([]fs.DirEntry, error) {
	if _, err := os.Lstat(f.Show()); errors.Is(err, fs.ErrNotExist) {
		// Most projects have none of the folders; r.ReadDir's error
		// would be worded for the model.
		return nil, nil
	}
	ents, err := r.ReadDir(f.Path)
	if err != nil {
		return nil, fmt.Errorf("%s not read: %w", f.Show(), err)
	}
	if len(ents) > maxEntries {
		return ents[:maxEntries], fmt.Errorf("%s has %d entries: only the first %d are read", f.Show(), len(ents), maxEntries)
	}
	return ents, nil
}

// readFile reads rel (relative to the Root) through r: a regular file
// (opened without waiting), not hidden, no link out of the Root, at most
// max bytes (a larger file is refused, not cut: half a skill would
// mislead the model).
func readFile(r *confine.Root, show, rel string, max int64) ([]byte, error) {
	data, err := r.ReadFile(rel, max)
	if err != nil {
		return nil, fmt.Errorf("%s not read: %w", show, err)
	}
	return data, nil
}
