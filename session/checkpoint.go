package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/sandbox"
)

// Checkpoints keep a file's content before the agent changes it, once per
// session and content, in the data directory (checkpoints/SESSION/HEX, HEX
// its sha256), so that a rewind can put it back exactly. tool_started
// already names the hash before and after each edit; the content behind
// each hash is here. A session's checkpoints are bounded
// (Config.CheckpointBytes): past the bound the oldest go first, and the
// user is told once, since a rewind to before them can no longer put those
// files back.

// DefaultCheckpointBytes bounds one session's checkpoints.
const DefaultCheckpointBytes = 256 << 20

// checkpoints is a session's checkpoint directory and what it holds,
// oldest first, read from the directory on first use.
type checkpoints struct {
	mu     sync.Mutex
	loaded bool
	files  []checkpointFile
	total  int64
	told   bool
}

type checkpointFile struct {
	name string
	size int64
}

func (s *Session) checkpointDir(id string) string {
	if s.m.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(s.m.cfg.DataDir, "checkpoints", id)
}

func (s *Session) checkpointCap() int64 {
	if s.m.cfg.CheckpointBytes > 0 {
		return s.m.cfg.CheckpointBytes
	}
	return DefaultCheckpointBytes
}

// keep stores content under its hash (sandbox.Hash), unless it is there,
// and prunes the oldest checkpoints past the session's bound.
func (s *Session) keep(content []byte) (string, error) {
	hash := sandbox.Hash(content)
	dir := s.checkpointDir(s.row.ID)
	if dir == "" {
		return hash, fmt.Errorf("no data directory keeps checkpoints")
	}
	name, _ := blobName(hash)
	c := &s.ckpt
	c.mu.Lock()
	defer c.mu.Unlock()
	s.loadCheckpoints(dir)
	created, err := storeBlob(dir, name, content)
	if err != nil {
		return hash, fmt.Errorf("keep a checkpoint: %w", err)
	}
	if !created {
		return hash, nil
	}
	c.files = append(c.files, checkpointFile{name: name, size: int64(len(content))})
	c.total += int64(len(content))
	pruned := 0
	for c.total > s.checkpointCap() && len(c.files) > 1 {
		old := c.files[0]
		if err := os.Remove(filepath.Join(dir, old.name)); err != nil && !os.IsNotExist(err) {
			break
		}
		c.files, c.total = c.files[1:], c.total-old.size
		pruned++
	}
	if pruned > 0 && !c.told {
		c.told = true
		s.notice(fmt.Sprintf("the oldest checkpoints were removed to keep this session's under %d MB: a rewind to before them cannot put those files back", s.checkpointCap()>>20))
	}
	return hash, nil
}

// loadCheckpoints reads what the directory holds, oldest first, once.
// The caller holds s.ckpt.mu.
func (s *Session) loadCheckpoints(dir string) {
	c := &s.ckpt
	if c.loaded {
		return
	}
	c.loaded = true
	entries, _ := os.ReadDir(dir)
	type dated struct {
		checkpointFile
		mod int64
	}
	var all []dated
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && !strings.HasSuffix(e.Name(), ".tmp") {
			all = append(all, dated{checkpointFile{e.Name(), fi.Size()}, fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(all, func(a, b dated) int { return int(a.mod - b.mod) })
	for _, d := range all {
		c.files = append(c.files, d.checkpointFile)
		c.total += d.size
	}
}

// checkpoint returns the content kept under hash: in this session's
// checkpoints, or those of the sessions it was forked from.
func (s *Session) checkpoint(hash string) ([]byte, error) {
	name, ok := blobName(hash)
	if !ok {
		return nil, fmt.Errorf("%q is no checkpoint", hash)
	}
	if s.m.cfg.DataDir == "" {
		return nil, fmt.Errorf("no data directory keeps checkpoints")
	}
	for id, hops := s.row.ID, 0; id != "" && hops < 64; hops++ {
		if data, err := os.ReadFile(filepath.Join(s.checkpointDir(id), name)); err == nil {
			return data, nil
		}
		row, err := s.m.cfg.Store.Session(context.Background(), id)
		if err != nil {
			break
		}
		id = row.ForkOf
	}
	return nil, fmt.Errorf("the checkpoint of %s is gone (checkpoints past the session's bound are removed, oldest first)", hash)
}

// keepBefore keeps the content a file has before an edit changes it, as
// the edit's plan read it. A failure is logged: the edit still runs, and
// a rewind to before it will say it cannot.
func (s *Session) keepBefore(fe sandbox.FileEdit) {
	if _, err := s.keep(fe.Old); err != nil {
		s.m.log.Warn("no checkpoint before an edit", "session", s.row.ID, "path", fe.Path, "err", err)
	}
}
