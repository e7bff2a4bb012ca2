package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/session/replay"
	"github.com/bridle-dev/bridle/tools"
)

// A commit can fail while the process lives on: the disk that holds the
// database is full, or the database turned read-only. The turn stops at
// the failed commit, since nothing it does after could be recorded, and:
//
//   - the editor is told at once: every call of the turn without a result
//     gets a failed tool_call_update (none is left in progress), and the
//     prompt is answered with the error;
//   - the session marks itself broken (Session.append), and its next use
//     (a prompt, session/load, session/resume, any request that names it)
//     first reads the log again and closes the turn as recovery does after
//     a crash, in words that say the log could not be written: a command
//     that ran is "outcome unknown", reads run again, edits are checked
//     against their hashes, calls never reached are "not run", and the
//     turn ends interrupted{write_failed}. If the log still cannot be
//     written, that use fails with the error and the next one tries again;
//   - after a restart, the same turn is closed by the crash recovery.

// stopped is how a turn that ended with err tells the editor what a
// failed commit left: the calls without a result are closed as failed,
// and the error says what happens next.
func (t *turn) stopped(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, ErrNotRecorded) {
		return err
	}
	s := t.s
	if calls, open := unfinished(s.row.ID, s.Events()); open {
		byName := s.toolsByName()
		for _, cs := range calls {
			if cs.result {
				continue
			}
			out := "not run: the turn stopped before this call because bridle could not write its log"
			if cs.started != nil {
				out = "bridle could not record this call's result: its log could not be written. " +
					"Once it can, the result is recorded as unknown (check the call's effects before running it again)."
			}
			tool, ok := byName[cs.call.Name]
			s.send(ctx, replay.CallUpdate(acp.ToolCallUpdate{ToolCallID: toolCallID(cs.key), Status: replay.Status(acp.ToolCallStatusFailed),
				Content: replay.Output(out, ok && tool.Kind() == tools.KindExecute)}))
		}
	}
	s.m.log.Error("a commit failed; the turn stopped", "session", s.row.ID, "err", err)
	return fmt.Errorf("%w. The turn stopped here; once the log can be written again (free some space), "+
		"the next prompt or session/load records how the turn ended", err)
}

// mend closes the turn a failed commit left open, if any (see stopped).
// It reads the log again, since a failed commit must not be trusted to
// have left nothing behind, and recovers the last turn. mute holds back
// the updates recovery writes (the editor is loading the session, and the
// replay shows them). A session with a turn running is left alone: the
// turn is still ending.
func (s *Session) mend(ctx context.Context, mute bool) error {
	s.mu.Lock()
	broken, busy := s.broken, s.cancel != nil
	s.mu.Unlock()
	if broken == nil || busy {
		return nil
	}
	l, err := s.m.loadLog(ctx, s.row.ID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.events, s.cut, s.held, s.broken = l.events, l.cut, nil, nil
	s.rewound, s.visibleN = hasRewind(l.events), -1
	s.memo.Reset()
	s.mu.Unlock()
	s.m.log.Info("closing the turn a failed commit left open", "session", s.row.ID, "err", broken)
	if mute {
		s.muted.Store(true)
		defer s.muted.Store(false)
	}
	if err := s.recoverCut(ctx, unrecorded); err != nil {
		return fmt.Errorf("session %s: close the turn a failed commit left open: %w", s.row.ID, err)
	}
	return nil
}
