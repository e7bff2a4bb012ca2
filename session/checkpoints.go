package session

import (
	"context"
	"strings"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/session/checkpoint"
	"github.com/bridle-dev/bridle/tools"
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

// closeSnapshot removes the scans' snapshot of the workspace: a cache
// for this process, not a record.
func (s *Session) closeSnapshot() { s.scanner().Close() }

// How a call's changes to the workspace are recorded, for a rewind to
// put back.
type recording int

const (
	recordNone  recording = iota // not recorded here
	recordWatch                  // the box tells which files it changes
	recordScan                   // scans before and after the call
)

// A childRunner is a tool whose call runs a child session: the task
// tool (subagent.Tool). The child records its own calls in its log,
// their checkpoints too, so a call of it is recorded by gathering what
// the child recorded (withChildChanges), and a restart never runs it
// again: Resolve reads from the child's log how it ended.
type childRunner interface {
	tools.Tool
	// Resolve is the result of a call, key, that started and has none.
	Resolve(ctx context.Context, callID, key string) event.ToolResult
}

func runsChild(t tools.Tool) bool {
	_, ok := t.(childRunner)
	return ok
}

// recording says how call is recorded: commands through the box's
// watch where it can (tools.Call.Watched, checkpoint.Recorder), by scans
// where it cannot (checkpoint.Scanner). A task call's subagent (a
// childRunner) records its own commands where they are watched, and the
// call's changes are then gathered from its log (withChildChanges);
// where they are not, the task call is scanned, and its subagent's calls
// are not.
func (s *Session) recording(call *tools.Call) recording {
	switch {
	case s.m.cfg.DataDir == "":
		return recordNone
	case runsChild(call.Tool):
		if s.parent != nil || s.commandsWatched() {
			return recordNone
		}
		return recordScan
	case call.Effect != permission.EffectExecute:
		return recordNone
	case call.Watched:
		return recordWatch
	case s.parent == nil || s.commandsWatched():
		return recordScan
	}
	return recordNone
}

// commandsWatched says whether the session's commands are recorded by
// the box's watch.
func (s *Session) commandsWatched() bool {
	for _, t := range s.m.cfg.Tools {
		if w, ok := t.(tools.WritesWatcher); ok && t.Name() == "run_command" {
			return w.WatchesWrites() == nil
		}
	}
	return false
}

// recordChanges runs run, the run of call with env, and returns what it
// changed in the workspace (for a rewind to put back) and why that may
// be incomplete ("" when it is not). run returns the box's word when it
// could not watch the command (tools.Result.Unwatched).
func (s *Session) recordChanges(ctx context.Context, call *tools.Call, env *tools.Env, run func() (unwatched string)) ([]event.FileChange, string) {
	switch s.recording(call) {
	case recordWatch:
		rec := s.checkpoints().Recorder(s.root)
		env.Writes = rec
		unwatched := run()
		env.Writes = nil
		return rec.Finish(ctx, unwatched)
	case recordScan:
		sc := s.scanner().Before(ctx)
		run()
		return s.scanner().After(ctx, sc)
	}
	run()
	return nil, ""
}

// keepStep keeps the content an edit will replace (tools.Call.Plan),
// before tool_started is recorded: a rewind puts it back.
func keepStep(x *callRun, next func() error) error {
	if fe := x.call.Plan; fe != nil && fe.Before != "" {
		x.t.s.checkpoints().KeepBefore(*fe)
	}
	for _, fe := range x.call.Plans {
		if fe.Before != "" {
			x.t.s.checkpoints().KeepBefore(fe)
		}
	}
	return next()
}

// recordStep records what the call changes in the workspace, for a
// rewind to put back (recordChanges); a task call's are what its
// subagent changed as well.
func recordStep(x *callRun, next func() error) error {
	s := x.t.s
	var err error
	x.changed, x.unscanned = s.recordChanges(x.ctx, x.call, x.env, func() string {
		err = next()
		return x.res.Unwatched
	})
	for _, fe := range x.res.Edits {
		// A multi-file edit's files (rename), recorded as a command's
		// changes: a rewind puts them back from the contents kept.
		x.changed = append(x.changed, event.FileChange{Path: fe.Path, Before: fe.Before, After: fe.After})
	}
	if runsChild(x.call.Tool) && s.parent == nil && s.m.cfg.DataDir != "" {
		x.changed, x.unscanned = s.withChildChanges(x.ctx, x.key, x.changed, x.unscanned, s.recording(x.call) == recordNone)
	}
	if code := x.env.Code; code != nil && len(x.changed) > 0 {
		// The language servers hear of what the command changed before
		// its result is given: the next edit's diagnostics know of it,
		// and a command's result ends with what its changes broke.
		paths := make([]string, len(x.changed))
		for i, c := range x.changed {
			paths[i] = c.Path
		}
		if note := code.Changed(x.ctx, paths); note != "" && x.call.Effect == permission.EffectExecute {
			x.res.Output = strings.TrimRight(x.res.Output, "\n") + "\n" + x.env.Redactor.Redact(note) + "\n"
		}
	}
	return err
}
