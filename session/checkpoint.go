package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bridle-dev/bridle/sandbox"
)

// Checkpoints keep a file's content before the agent changes it, once,
// by its hash, in the data directory (checkpoints/HEX), so that a rewind
// can put it back exactly. tool_started already names the hash before
// and after each edit; the content behind each hash is here.

func (s *Session) checkpointDir() string {
	if s.m.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(s.m.cfg.DataDir, "checkpoints")
}

// keep stores content under its hash (sandbox.Hash), unless it is there.
func (s *Session) keep(content []byte) (string, error) {
	hash := sandbox.Hash(content)
	dir := s.checkpointDir()
	if dir == "" {
		return hash, fmt.Errorf("no data directory keeps checkpoints")
	}
	path := filepath.Join(dir, strings.TrimPrefix(hash, "sha256:"))
	if _, err := os.Stat(path); err == nil {
		return hash, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return hash, fmt.Errorf("keep a checkpoint: %w", err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		os.Remove(tmp)
		return hash, fmt.Errorf("keep a checkpoint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return hash, fmt.Errorf("keep a checkpoint: %w", err)
	}
	return hash, nil
}

// checkpoint returns the content kept under hash.
func (s *Session) checkpoint(hash string) ([]byte, error) {
	name := strings.TrimPrefix(hash, "sha256:")
	if len(name) != 64 || strings.Trim(name, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%q is no checkpoint", hash)
	}
	dir := s.checkpointDir()
	if dir == "" {
		return nil, fmt.Errorf("no data directory keeps checkpoints")
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("the checkpoint of %s is gone: %w", hash, err)
	}
	return data, nil
}

// keepBefore keeps the content a file has before an edit changes it
// (nothing for a file that does not exist yet). A failure is logged: the
// edit still runs, and a rewind to before it will say it cannot.
func (s *Session) keepBefore(env *sandbox.Env, path string) {
	data, exists, err := sandbox.FileContent(env, path)
	if err == nil && exists {
		_, err = s.keep(data)
	}
	if err != nil {
		s.m.log.Warn("no checkpoint before an edit", "session", s.row.ID, "path", path, "err", err)
	}
}
