package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Root confines file access to the workspace directory. It is built on
// os.Root, so "..", absolute paths and symlinks cannot lead outside it,
// even when a link is swapped in between a check and a use.
type Root struct {
	dir  string
	root *os.Root
}

// OpenRoot opens dir as a workspace root. dir must be absolute.
func OpenRoot(dir string) (*Root, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("workspace %q is not an absolute path", dir)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	return &Root{dir: filepath.Clean(dir), root: r}, nil
}

// Dir returns the workspace directory.
func (r *Root) Dir() string { return r.dir }

// Close releases the root's directory handle.
func (r *Root) Close() error { return r.root.Close() }

// Rel turns a path the model gave (relative to the workspace, or absolute
// inside it) into a slash-free relative path for os.Root. It refuses
// absolute paths outside the workspace with an error naming both.
func (r *Root) Rel(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("empty path: give a path relative to the workspace %s", r.dir)
	}
	if filepath.IsAbs(path) {
		rel, err := filepath.Rel(r.dir, filepath.Clean(path))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("path %s is outside the workspace %s", path, r.dir)
		}
		return rel, nil
	}
	return filepath.Clean(path), nil
}

// ReadFile reads a file inside the workspace.
func (r *Root) ReadFile(path string) ([]byte, error) {
	rel, err := r.Rel(path)
	if err != nil {
		return nil, err
	}
	b, err := r.root.ReadFile(rel)
	if err != nil {
		return nil, r.explain(path, err)
	}
	return b, nil
}

// explain rewords an os.Root error so it names the path and the root.
func (r *Root) explain(path string, err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("path %s leads outside the workspace %s", path, r.dir)
	}
	if os.IsNotExist(err) {
		return fmt.Errorf("%s does not exist in the workspace %s", path, r.dir)
	}
	return fmt.Errorf("%s (workspace %s): %w", path, r.dir, err)
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
