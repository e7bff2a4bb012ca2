package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/session/replay"
	"github.com/bridle-dev/bridle/tools"
)

// A rewind goes back to before prompt N: every file the agent changed
// since (edit_file, write_file) gets the content it had before N, from the
// checkpoints, and the model sees the session as it was before N (the
// events stay in the log; the window skips them). A file the user changed
// after the agent is not overwritten unless the user says so. The plan is
// recorded (rewind_started) before any file is touched, so a rewind a
// crash cut short is finished on restart (finishRewind).

// rewindCommand reads "/rewind N".
func rewindCommand(content []event.Content) (int, bool, error) {
	name, arg, ok := slashCommand(content)
	if !ok || name != "/rewind" {
		return 0, false, nil
	}
	switch arg {
	case "":
		return 0, true, nil // list the prompts
	case "undo":
		return undoRewind, true, nil
	}
	n, ok := promptNumber(arg)
	if !ok {
		return 0, true, fmt.Errorf("%w: /rewind %q: /rewind takes the number of the prompt to go back to before, in digits counted from 1 as /rewind alone lists them (e.g. /rewind 3), or undo", ErrInvalid, arg)
	}
	return n, true, nil
}

// PromptView is one of the session's prompts, for choosing where to
// rewind to: its number, its first line, whether a rewind went back over
// it, and the files the agent changed while answering it.
type PromptView struct {
	N       int      `json:"n"`
	Text    string   `json:"text"`
	Rewound bool     `json:"rewound,omitempty"`
	Files   []string `json:"files"`
}

// Prompts lists the session's prompts with the files each changed.
func (s *Session) Prompts(ctx context.Context) ([]PromptView, error) {
	events, err := s.wholeLog(ctx, rewindKinds...)
	if err != nil {
		return nil, err
	}
	ranges := rewoundRanges(events)
	var out []PromptView
	for _, e := range events {
		switch v := e.Payload.(type) {
		case event.UserMessage:
			shown := v.Content
			if v.Command != nil {
				// As the user typed it, as the editor shows it.
				shown = []event.Content{{Type: "text", Text: v.Command.Typed()}}
			}
			out = append(out, PromptView{N: len(out) + 1, Text: titleOf(shown), Rewound: inRanges(ranges, e.Seq), Files: []string{}})
		case event.ToolStarted:
			if n := len(out); n > 0 && v.Path != "" && (v.BeforeHash != "" || v.AfterHash != "") && !slices.Contains(out[n-1].Files, v.Path) {
				out[n-1].Files = append(out[n-1].Files, v.Path)
			}
		case event.ToolResult, event.CommandFinished:
			for _, f := range changedBy(v) {
				if n := len(out); n > 0 && !slices.Contains(out[n-1].Files, f.Path) {
					out[n-1].Files = append(out[n-1].Files, f.Path)
				}
			}
		}
	}
	return out, nil
}

// rewindKinds are the events a rewind's plan reads: the prompts, and the
// files the calls changed.
var rewindKinds = []event.Kind{event.KindUserMessage, event.KindToolStarted, event.KindToolResult, event.KindCommandFinished}

// changedBy is what a command changed in the workspace, as its result
// records it, or a background command's end (command_finished).
func changedBy(p event.Payload) []event.FileChange {
	switch v := p.(type) {
	case event.ToolResult:
		return v.Changed
	case event.CommandFinished:
		return v.Changed
	}
	return nil
}

// wholeSince is the session's log from seq from on, the stubs a rewind's
// plan reads whole.
func (s *Session) wholeSince(ctx context.Context, from int64) ([]event.Event, error) {
	events := s.Events()
	i := sort.Search(len(events), func(i int) bool { return events[i].Seq >= from })
	out := make([]event.Event, 0, len(events)-i)
	err := s.eachWhole(ctx, events[i:], 0, lastSeq(events), rewindKinds, func(e event.Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// promptsText is /rewind's answer with no number: the prompts to choose
// from.
func promptsText(ps []PromptView) string {
	if len(ps) == 0 {
		return "There is no prompt to rewind to yet."
	}
	var b strings.Builder
	b.WriteString("Prompts you can rewind to (/rewind N goes back to before prompt N):")
	for _, p := range ps {
		fmt.Fprintf(&b, "\n%d. %s", p.N, p.Text)
		if p.Rewound {
			b.WriteString(" (rewound)")
		}
		if len(p.Files) > 0 {
			fmt.Fprintf(&b, " — changed %s", strings.Join(p.Files, ", "))
		}
	}
	return b.String()
}

// undoRewind is "/rewind undo" as rewindCommand reads it.
const undoRewind = -1

// lastRewind is the latest rewind still in force: its event and seq.
func lastRewind(events []event.Event) (event.Rewound, int64, bool) {
	undone := map[int64]bool{}
	for i := len(events) - 1; i >= 0; i-- {
		r, ok := events[i].Payload.(event.Rewound)
		switch {
		case !ok:
		case r.Undoes != 0:
			undone[r.Undoes] = true
		case !undone[events[i].Seq]:
			return r, events[i].Seq, true
		}
	}
	return event.Rewound{}, 0, false
}

// rewindable says why /rewind n (undoRewind: /rewind undo) cannot be
// done, before anything is stopped or read; nil when it can.
func (s *Session) rewindable(n int) error {
	events := s.Events()
	if n == undoRewind {
		if _, _, ok := lastRewind(events); !ok {
			return fmt.Errorf("%w: /rewind undo: there is no rewind to undo", ErrInvalid)
		}
		return nil
	}
	if prompts := promptSeqs(events); n < 1 || n > len(prompts) {
		return fmt.Errorf("%w: /rewind %d: this session has %d prompts", ErrInvalid, n, len(prompts))
	}
	return nil
}

// undoPlan is what undoing the last rewind would do: the files it put
// back go back to what it replaced.
func (s *Session) undoPlan(ctx context.Context) (RewindPlan, int64, error) {
	if err := s.rewindable(undoRewind); err != nil {
		return RewindPlan{}, 0, err
	}
	r, seq, _ := lastRewind(s.Events())
	plan := RewindPlan{Prompt: r.Turn, From: r.From, Restore: []event.FileRestore{}, Yours: []string{}, Kept: []string{}}
	env := s.env("rewind")
	for _, f := range r.Restored {
		now, err := tools.HashFile(ctx, env, f.Path)
		switch {
		case err != nil:
			plan.Kept = append(plan.Kept, fmt.Sprintf("%s (cannot be read: %v)", f.Path, err))
		case now == f.From:
		case now == f.To:
			// A file the rewind removed comes back with the mode it had.
			plan.Restore = append(plan.Restore, event.FileRestore{Path: f.Path, From: now, To: f.From, Mode: f.Mode})
		default:
			plan.Yours = append(plan.Yours, f.Path)
		}
	}
	if err := ctx.Err(); err != nil {
		return RewindPlan{}, 0, err
	}
	return plan, seq, nil
}

// promptSeqs are the seqs of the session's prompts, in order.
func promptSeqs(events []event.Event) []int64 {
	var out []int64
	for _, e := range events {
		if e.Kind() == event.KindUserMessage { // a stub too
			out = append(out, e.Seq)
		}
	}
	return out
}

// changesSince are the files the session changed from seq from on: for
// each, its hash before the first change and after the last, in the
// order first changed. A rewind's restorations count as changes.
func changesSince(events []event.Event, from int64) (order []string, before, after map[string]string) {
	before, after = map[string]string{}, map[string]string{}
	note := func(path, b, a string) {
		if _, ok := before[path]; !ok {
			before[path] = b
			order = append(order, path)
		}
		after[path] = a
	}
	for _, e := range events {
		if e.Seq < from {
			continue
		}
		switch v := e.Payload.(type) {
		case event.ToolStarted:
			if v.Path != "" && (v.BeforeHash != "" || v.AfterHash != "") {
				note(v.Path, v.BeforeHash, v.AfterHash)
			}
		case event.ToolResult, event.CommandFinished:
			for _, f := range changedBy(v) {
				note(f.Path, f.Before, f.After)
			}
		case event.Rewound:
			for _, f := range v.Restored {
				note(f.Path, f.From, f.To)
			}
		}
	}
	return order, before, after
}

// firstChanges are, per file, the first change a command made to it from
// seq from on: its mode before, for a file put back anew, and why what it
// held before was not kept.
func firstChanges(events []event.Event, from int64) map[string]event.FileChange {
	first := map[string]event.FileChange{}
	for _, e := range events {
		if e.Seq >= from {
			for _, f := range changedBy(e.Payload) {
				if _, seen := first[f.Path]; !seen {
					first[f.Path] = f
				}
			}
		}
	}
	return first
}

// unscanned says, for the commands (and task calls) from seq from on that
// ran without a scan around them, that what they changed cannot be put
// back: one line per reason.
func unscanned(events []event.Event, from int64) []string {
	var whys []string
	count := map[string]int{}
	for _, e := range events {
		var why string
		switch v := e.Payload.(type) {
		case event.ToolResult:
			why = v.Unscanned
		case event.CommandFinished:
			why = v.Unscanned
		}
		if e.Seq >= from && why != "" {
			if count[why]++; count[why] == 1 {
				whys = append(whys, why)
			}
		}
	}
	out := make([]string, len(whys))
	for i, why := range whys {
		calls := "1 command"
		if n := count[why]; n > 1 {
			calls = fmt.Sprintf("%d commands", n)
		}
		out[i] = fmt.Sprintf("what %s changed since then (not checkpointed: %s)", calls, why)
	}
	return out
}

// RewindPlan is what a rewind to before a prompt would do.
type RewindPlan struct {
	// Prompt is the prompt's number (from 1); From its seq.
	Prompt int   `json:"prompt"`
	From   int64 `json:"-"`
	// Restore are the files the agent changed since, to put back ("to"
	// empty: to remove, the agent created it).
	Restore []event.FileRestore `json:"restore"`
	// Yours are files the user changed after the agent: put back only
	// if the user says so.
	Yours []string `json:"yours"`
	// Kept are files that cannot be put back, with why.
	Kept []string `json:"kept"`
}

// RewindPlan says what /rewind n would do now, changing nothing.
func (s *Session) RewindPlan(ctx context.Context, n int) (RewindPlan, error) {
	if err := s.rewindable(n); err != nil {
		return RewindPlan{}, err
	}
	prompts := promptSeqs(s.Events())
	plan := RewindPlan{Prompt: n, From: prompts[n-1], Restore: []event.FileRestore{}, Yours: []string{}, Kept: []string{}}
	events, err := s.wholeSince(ctx, plan.From)
	if err != nil {
		return RewindPlan{}, err
	}
	order, before, after := changesSince(events, plan.From)
	first := firstChanges(events, plan.From)
	env := s.env("rewind")
	for _, p := range order {
		now, err := tools.HashFile(ctx, env, p)
		switch {
		case err != nil:
			plan.Kept = append(plan.Kept, fmt.Sprintf("%s (cannot be read: %v)", p, err))
		case now == before[p]:
			// As it was already.
		case before[p] == event.NotKept:
			plan.Kept = append(plan.Kept, fmt.Sprintf("%s (a command changed it and what it held before was not kept: %s)", p, cmp.Or(first[p].Why, "too large, hard-linked, or past the snapshot's bound")))
		case now == after[p]:
			plan.Restore = append(plan.Restore, event.FileRestore{Path: p, From: now, To: before[p], Mode: first[p].Mode})
		default:
			plan.Yours = append(plan.Yours, p)
		}
	}
	if err := ctx.Err(); err != nil {
		return RewindPlan{}, err // the files read after the cancel are not known
	}
	plan.Kept = append(plan.Kept, unscanned(events, plan.From)...)
	return plan, nil
}

// rewind runs "/rewind n" as a turn of its own: no model call. Cancelled
// while it plans (reading files, asking about the user's), it has
// recorded and touched nothing, and the prompt ends as cancelled.
func (t *turn) rewind(ctx context.Context, n int) (StopReason, error) {
	stop, err := t.rewindFiles(ctx, n)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return StopCancelled, nil
	}
	return stop, err
}

func (t *turn) rewindFiles(ctx context.Context, n int) (StopReason, error) {
	s := t.s
	var plan RewindPlan
	var undoes int64
	var err error
	if err := s.rewindable(n); err != nil {
		return "", err
	}
	// A command still running in the background would write over the
	// files the rewind puts back; stopped first, what it changed is in
	// the log (command_finished) before the plan reads it.
	s.stopBackgroundTelling("the session is rewinding", "rewind",
		" before putting files back, so that it cannot write over them", "")
	if n == undoRewind {
		plan, undoes, err = s.undoPlan(ctx)
	} else {
		plan, err = s.RewindPlan(ctx, n)
	}
	if err != nil {
		return "", err
	}
	from, restore, kept := plan.From, plan.Restore, plan.Kept
	env := s.env("rewind")
	if len(plan.Yours) > 0 {
		events, err := s.wholeSince(ctx, from)
		if err != nil {
			return "", err
		}
		_, before, _ := changesSince(events, from)
		first := firstChanges(events, from)
		if undoes != 0 {
			r, _, _ := lastRewind(s.Events())
			before = map[string]string{}
			for _, f := range r.Restored {
				before[f.Path] = f.From
			}
		}
		yes, answered, err := t.askOverwrite(ctx, from, plan.Yours)
		if err != nil {
			return "", err
		}
		for _, p := range plan.Yours {
			if !yes {
				why := "you said leave it"
				if !answered {
					why = "no one answered whether to put it back"
				}
				kept = append(kept, p+" (changed since the agent; "+why+")")
				continue
			}
			// Hashed again: the user may have changed it while asked. A file
			// that cannot be read now is not touched (what it holds could
			// not be kept, so the rewind could not be undone).
			now, err := tools.HashFile(ctx, env, p)
			if err != nil {
				kept = append(kept, fmt.Sprintf("%s (cannot be read: %v)", p, err))
				continue
			}
			restore = append(restore, event.FileRestore{Path: p, From: now, To: before[p], Mode: first[p].Mode})
		}
	}
	// What is replaced is kept too, so this rewind can be undone; what is
	// put back must be there before anything is touched.
	var ready []event.FileRestore
	for _, r := range restore {
		if r.From != "" {
			data, exists, err := tools.FileContent(ctx, env, r.Path)
			if err == nil && exists {
				_, err = s.checkpoints().Keep(data)
			}
			if err != nil {
				kept = append(kept, fmt.Sprintf("%s (its present content could not be kept: %v)", r.Path, err))
				continue
			}
		}
		if r.To != "" {
			if _, err := s.checkpoints().Get(r.To); err != nil {
				kept = append(kept, fmt.Sprintf("%s (%v)", r.Path, err))
				continue
			}
		} else if fi, err := env.Root.Lstat(r.Path); err == nil {
			// A file to remove: its mode, for an undo that makes it again.
			r.Mode = uint32(fi.Mode().Perm())
		}
		ready = append(ready, r)
	}
	if err := ctx.Err(); err != nil {
		return "", err // what was read after the cancel is not to be trusted
	}
	if _, err := s.append(ctx, event.RewindStarted{Turn: plan.Prompt, From: from, Files: ready, Undoes: undoes}); err != nil {
		return "", err
	}
	// Once the plan is recorded the rewind finishes, cancelled or not:
	// each file still has the editor's own time bound.
	restored, failed := s.applyRestores(context.WithoutCancel(ctx), env, ready, from)
	kept = append(kept, failed...)
	// The end and the turn's end commit together: a log never holds a
	// rewind that ended in a turn that did not.
	t.tail = append(t.tail, event.Rewound{Turn: plan.Prompt, From: from, Restored: restored, Kept: kept, Undoes: undoes})
	stop, err := t.finish(ctx, StopEndTurn, nil)
	if err != nil {
		return "", err
	}
	s.rewindDone(ctx, restored)
	return stop, nil
}

// applyRestores puts files back; it returns those put back and why the
// others were not.
func (s *Session) applyRestores(ctx context.Context, env *tools.Env, files []event.FileRestore, from int64) (done []event.FileRestore, failed []string) {
	return s.checkpoints().Restore(ctx, env, files, s.timeOf(from))
}

// timeOf is when the event seq was recorded; now if it is not in the log,
// so that nothing counts as made since.
func (s *Session) timeOf(seq int64) time.Time {
	for _, e := range s.Events() {
		if e.Seq == seq {
			return e.Time
		}
	}
	return time.Now()
}

// askOverwrite asks whether files the user changed after the agent may be
// put back too; no answer is no. answered says the user chose.
func (t *turn) askOverwrite(ctx context.Context, from int64, paths []string) (yes, answered bool, err error) {
	s := t.s
	title := "Rewind: put back files you changed since the agent?"
	kind := acp.ToolKindEdit
	text := "You changed these files after the agent did; rewinding puts them back as they were before that prompt:\n" + strings.Join(paths, "\n")
	var locs []acp.ToolCallLocation
	for _, p := range paths {
		if abs, ok := s.root.Locate(p); ok {
			locs = append(locs, acp.ToolCallLocation{Path: abs})
		}
	}
	resp, err := s.client().RequestPermission(ctx, acp.RequestPermissionRequest{SessionID: s.row.ID,
		ToolCall: acp.ToolCallUpdate{ToolCallID: fmt.Sprintf("rewind-%d", from), Title: &title, Kind: &kind, Locations: locs, Content: replay.Output(text, false)},
		Options: []acp.PermissionOption{
			{OptionID: optAllowOnce, Name: "Put them back too", Kind: optAllowOnce},
			{OptionID: optRejectOnce, Name: "Leave them as they are", Kind: optRejectOnce},
		}})
	if err != nil {
		if ctx.Err() != nil {
			return false, false, ctx.Err()
		}
		s.m.log.Warn("rewind question failed; leaving the user's files alone", "session", s.row.ID, "err", err)
		return false, false, nil
	}
	a := Answered(resp)
	return a == optAllowOnce, a != "", nil
}

// rewindCutShort says the log's last rewind has its plan but not its end.
func rewindCutShort(events []event.Event) bool {
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].Payload.(type) {
		case event.Rewound:
			return false
		case event.RewindStarted:
			return true
		}
	}
	return false
}

// finishRewind completes a rewind a dead process left between its plan
// and its end: putting a file back is the same however often it is done.
func (s *Session) finishRewind(ctx context.Context) error {
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		switch v := events[i].Payload.(type) {
		case event.Rewound:
			if i == len(events)-1 {
				// Ended, but the turn's end was lost with the process
				// (an earlier bridle committed them apart).
				_, err := s.commit(ctx, nil, event.TurnFinished{StopReason: string(StopEndTurn)})
				return err
			}
			return nil
		case event.RewindStarted:
			restored, failed := s.applyRestores(ctx, s.env("rewind"), v.Files, v.From)
			if err := ctx.Err(); err != nil {
				// Withdrawn midway: what was put back is put back again
				// by whoever finishes it, the same however often.
				return err
			}
			s.m.log.Info("finished a rewind cut short", "session", s.row.ID, "files", len(restored))
			_, err := s.commit(ctx, nil, event.Rewound{Turn: v.Turn, From: v.From, Restored: restored, Kept: failed, Undoes: v.Undoes},
				event.TurnFinished{StopReason: string(StopEndTurn)})
			s.rewindDone(ctx, restored)
			return err
		}
	}
	return nil
}

// finishPendingRewind finishes, first thing in a turn, a rewind a crash
// cut short that was left for AskPending (the editor holds the files)
// when a prompt came before it: the turn must not run on files half put
// back. It runs off the read loop, so the editor can answer.
func (s *Session) finishPendingRewind(ctx context.Context) error {
	s.mu.Lock()
	pending := s.rewindPending && s.parent == nil
	s.rewindPending = false
	s.mu.Unlock()
	if !pending || !rewindCutShort(s.Events()) {
		return nil
	}
	if err := s.finishRewind(ctx); err != nil {
		// Still cut short: the next turn tries again rather than run on
		// files half put back.
		s.mu.Lock()
		s.rewindPending = true
		s.mu.Unlock()
		return fmt.Errorf("finish the rewind a restart cut short: %w", err)
	}
	return nil
}

// rewindDone makes the window read the log afresh, without what a rewind
// just went back over, and what the model has seen what that log shows.
// The window may start earlier now (a compaction it went back over):
// the log is read again, with stubs up to where it starts.
func (s *Session) rewindDone(ctx context.Context, restored []event.FileRestore) {
	s.mu.Lock()
	s.rewound, s.visibleN = true, -1
	s.mu.Unlock()
	s.memo.Reset()
	if err := s.restart(ctx); err != nil {
		s.m.log.Warn("the log was not read again after a rewind; the window reads what it holds", "session", s.row.ID, "err", err)
	}
	paths := make([]string, len(restored))
	for i, f := range restored {
		paths[i] = f.Path
	}
	s.files().rewound(s.seenIn(ctx, s.view()), paths)
}

func hasRewind(events []event.Event) bool {
	for _, e := range events {
		if e.Kind() == event.KindRewound {
			return true
		}
	}
	return false
}

// visible is the log as the model sees it: without the events a rewind
// went back over (from the prompt it went back to, to its end).
func visible(events []event.Event) []event.Event {
	ranges := rewoundRanges(events)
	if len(ranges) == 0 {
		return events
	}
	out := make([]event.Event, 0, len(events))
	for _, e := range events {
		if !inRanges(ranges, e.Seq) {
			out = append(out, e)
		}
	}
	return out
}

// rewoundRanges are the seq ranges the rewinds still in force went back
// over: from the prompt each went back to, to its rewound event. A rewind
// that was undone hides nothing, and an undo has no range of its own.
func rewoundRanges(events []event.Event) [][2]int64 {
	var ranges [][2]int64
	undone := map[int64]bool{}
	for _, e := range events {
		if r, ok := e.Payload.(event.Rewound); ok && r.Undoes != 0 {
			undone[r.Undoes] = true
		}
	}
	for _, e := range events {
		if r, ok := e.Payload.(event.Rewound); ok && r.Undoes == 0 && !undone[e.Seq] {
			ranges = append(ranges, [2]int64{r.From, e.Seq})
		}
	}
	return ranges
}

func inRanges(ranges [][2]int64, seq int64) bool {
	for _, r := range ranges {
		if seq >= r[0] && seq <= r[1] {
			return true
		}
	}
	return false
}
