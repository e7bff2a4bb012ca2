package session

import (
	"context"

	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/session/checkpoint"
	"github.com/bridle-dev/bridle/session/event"
)

// checkpoints is the session's checkpoint store (package checkpoint),
// made on first use.
func (s *Session) checkpoints() *checkpoint.Store {
	s.ckptOnce.Do(func() {
		s.ckpt = checkpoint.New(checkpoint.Options{
			DataDir: s.m.cfg.DataDir,
			Session: s.row.ID,
			Bytes:   s.m.cfg.CheckpointBytes,
			ForkOf: func(ctx context.Context, id string) (string, error) {
				row, err := s.m.cfg.Store.Session(ctx, id)
				return row.ForkOf, err
			},
			Notice: s.notice,
			Logger: s.m.log,
		})
		s.snap = s.ckpt.Scanner(s.root, checkpoint.ScanOptions{Files: s.m.cfg.SnapshotFiles, Dirs: s.m.cfg.SnapshotDirs})
	})
	return s.ckpt
}

// scanner scans the session's workspace around the calls that may
// change any file of it.
func (s *Session) scanner() *checkpoint.Scanner {
	s.checkpoints()
	return s.snap
}

// snapshots reports whether a call of tool is wrapped in scans: commands,
// and task calls for what their subagent does. A subagent's own calls are
// not: its parent's task call covers them.
func (s *Session) snapshots(tool sandbox.Tool) bool {
	if s.parent != nil || s.m.cfg.DataDir == "" {
		return false
	}
	return tool.Effect() == sandbox.EffectExecute || tool.Name() == "task"
}

// recordChanges runs call, a call of tool, and returns what it changed
// in the workspace (for a rewind to put back) and why that may be
// incomplete ("" when it is not).
func (s *Session) recordChanges(ctx context.Context, tool sandbox.Tool, call func()) ([]event.FileChange, string) {
	if !s.snapshots(tool) {
		call()
		return nil, ""
	}
	sc := s.scanner().Before(ctx)
	call()
	return s.scanner().After(ctx, sc)
}
