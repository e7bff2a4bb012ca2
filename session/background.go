package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/session/checkpoint"
	"github.com/bridle-dev/bridle/session/replay"
	"github.com/bridle-dev/bridle/tools"
)

// The commands run_command starts in the background (tools.Background)
// belong to a top-level session: their output is shown on the card of
// the call that started them until they end, what they change is
// recorded for a rewind as a command's is, and their end is recorded
// (command_finished). The session's end (close, delete, bridle's exit),
// a session/cancel, a switch to read-only mode (which promises no
// writes) and a rewind (before it plans: what they wrote is then in the
// log, and nothing writes over the files it puts back) stop them; a bridle that died with some running
// took them with it (the box's first process dies with bridle), and
// the next one to open the session records them as ended, how unknown
// (endOrphans).

// bgRecords are the recordings of a session's background commands, by
// the key of the call that started each.
type bgRecords struct {
	mu   sync.Mutex
	recs map[string]bgRecord
}

// bgRecord records one command's changes: by the box's watch (rec) or by
// scans around it (scan).
type bgRecord struct {
	rec  *checkpoint.Recorder
	scan *checkpoint.Scan
}

// newBackground is the session's set of background commands.
func (s *Session) newBackground() *tools.Background {
	return &tools.Background{
		Begin: s.beginBackground,
		Live: func(key, tail string) {
			s.send(context.Background(), replay.CallUpdate(acp.ToolCallUpdate{ToolCallID: toolCallID(key), Content: replay.Output(tail, true)}))
		},
		Started: s.recordBox,
		Ended:   s.endBackground,
		// A call approved before a switch to read-only must not start
		// one after SetMode's StopAll.
		Refuse: func() string {
			if s.Mode() == permission.ModeReadOnly {
				return "the session is in read-only mode: no command starts in the background"
			}
			return ""
		},
	}
}

// boxRecord is the file naming the first process of the box of the
// background command started by call key (pid@starttime@bootid, as a
// lease's holder): in bridle's data directory, hidden from commands.
func (s *Session) boxRecord(key string) string {
	if s.m.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(s.m.cfg.DataDir, "background", s.row.ID, strings.ReplaceAll(key, "/", "_"))
}

// recordBox records the box of a background command, so that a bridle
// opening the session after this one died can find it and kill it.
func (s *Session) recordBox(key string, pid int) {
	path := s.boxRecord(key)
	if path == "" {
		return
	}
	holder := fmt.Sprintf("%d@%s@%s", pid, startTime(pid), bootID())
	err := os.MkdirAll(filepath.Dir(path), 0o700)
	if err == nil {
		err = os.WriteFile(path, []byte(holder), 0o600)
	}
	if err != nil {
		s.m.log.Warn("a background command's box was not recorded", "session", s.row.ID, "err", err)
	}
}

// killRecorded kills the box the record of call key names, if that very
// process still runs (the same pid, start time and boot: a pid used again
// by another process is left alone), and removes the record. It says
// whether it killed one.
func (s *Session) killRecorded(key string) bool {
	path := s.boxRecord(key)
	if path == "" {
		return false
	}
	defer os.Remove(filepath.Dir(path)) // once empty
	defer os.Remove(path)
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	holder := string(data)
	at := strings.IndexByte(holder, '@')
	if at < 0 || !holderAlive(holder) {
		return false
	}
	pid, _ := strconv.Atoi(holder[:at])
	return killBox(pid)
}

// beginBackground starts recording what the command of call key
// changes, as a command's changes are recorded (recordChanges).
func (s *Session) beginBackground(key string) box.Writes {
	if s.m.cfg.DataDir == "" {
		return nil
	}
	var r bgRecord
	var w box.Writes
	if s.commandsWatched() {
		r.rec = s.checkpoints().Recorder(s.root)
		w = r.rec
	} else {
		r.scan = s.scanner().Before(context.Background())
	}
	s.bgRecs.mu.Lock()
	if s.bgRecs.recs == nil {
		s.bgRecs.recs = map[string]bgRecord{}
	}
	s.bgRecs.recs[key] = r
	s.bgRecs.mu.Unlock()
	return w
}

// endBackground records how a background command ended and what it
// changed; its card is done.
func (s *Session) endBackground(end tools.BackgroundEnd) {
	ctx := context.Background()
	s.bgRecs.mu.Lock()
	r, ok := s.bgRecs.recs[end.Key]
	delete(s.bgRecs.recs, end.Key)
	s.bgRecs.mu.Unlock()
	if path := s.boxRecord(end.Key); path != "" {
		os.Remove(path)
		os.Remove(filepath.Dir(path)) // once empty
	}
	ev := event.CommandFinished{Key: end.Key, ID: end.ID, Status: end.Status, Summary: end.Summary, Tail: end.Tail}
	switch {
	case !ok:
	case r.rec != nil:
		ev.Changed, ev.Unscanned = r.rec.Finish(ctx, end.Unwatched)
	case r.scan != nil:
		ev.Changed, ev.Unscanned = s.scanner().After(ctx, r.scan)
	}
	if _, err := s.commit(ctx, nil, ev); err != nil {
		s.m.log.Warn("the end of a background command was not recorded", "session", s.row.ID, "command", end.ID, "err", err)
	}
}

// stopBackground stops the session's background commands, for why, and
// waits until their ends are recorded; it returns the ids of those that
// were running.
func (s *Session) stopBackground(why string) []string {
	if s.bg == nil {
		return nil
	}
	return s.bg.StopAll(why)
}

// stopBackgroundTelling stops the session's background commands, for
// why, and tells the user which were stopped, by whom (a mode, a rewind)
// and because of what; more follows what was recorded.
func (s *Session) stopBackgroundTelling(why, by, because, more string) {
	if ids := s.stopBackground(why); len(ids) > 0 {
		s.notice(fmt.Sprintf("%s: stopped what ran in the background (%s)%s; what it changed is recorded%s", by, strings.Join(ids, ", "), because, more))
	}
}

// cancelBackground stops the session's background commands, for why,
// and returns at once: their ends are recorded as they come.
func (s *Session) cancelBackground(why string) {
	if s.bg != nil {
		s.bg.Cancel(why)
	}
}

// endOrphans records as ended, how unknown, the background commands the
// log says were started and never ended: a bridle that served the
// session died with them running. Their box dies with it (its first
// process is killed with bridle, Pdeathsig); should one still run, the
// record of its box names it, and it is killed. It then numbers the
// commands started here after those of the log.
func (s *Session) endOrphans(ctx context.Context) error {
	started := map[string]string{}
	var order []string
	ended := 0
	defer func() {
		if s.bg != nil {
			s.bg.Number(ended + 1)
		}
	}()
	for _, e := range s.Events() {
		switch v := e.Payload.(type) {
		case event.ToolResult:
			if v.Background != "" {
				started[v.Key] = v.Background
				order = append(order, v.Key)
			}
		case event.CommandFinished:
			delete(started, v.Key)
			ended++
		}
	}
	for _, key := range order {
		id, ok := started[key]
		if !ok {
			continue
		}
		how := "the command was killed with it"
		if s.killRecorded(key) {
			how = "the command was still running, and was killed now"
		}
		ev := event.CommandFinished{Key: key, ID: id, Status: "unknown",
			Summary:   "[bridle ended while the command ran in the background (it was killed or crashed): " + how + "; how it ended, and what it changed in the workspace since it started, are unknown]",
			Unscanned: "bridle ended while the command ran in the background"}
		if _, err := s.commit(ctx, nil, ev); err != nil {
			return err
		}
		ended++
	}
	return nil
}
