package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/session/checkpoint"
	"github.com/bridle-dev/bridle/session/replay"
	"github.com/bridle-dev/bridle/session/space"
	"github.com/bridle-dev/bridle/session/subagent"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
	"github.com/bridle-dev/bridle/tools/mcp"
)

// Session is one live session: its log, its workspace and its running turn.
type Session struct {
	m    *Manager
	root *confine.Root
	// space is the watcher and the .env files the sessions on the same
	// workspace share.
	space *space.Space
	// sec is the redactor and what it knows (secrets.go).
	sec secrets
	// box is what every tool call gets: the workspace, the artifact store
	// and the editor's buffers; each call adds its key and the redactor.
	box tools.Env
	// bg are the commands run_command started in the background (a
	// top-level session's; nil for a child), bgRecs what records their
	// changes (background.go).
	bg     *tools.Background
	bgRecs bgRecords
	// regs caches the registries of the session's modes.
	regs tools.Registries
	// calls are the Envs of the calls of the running turn, by key: the
	// live card of a call, its preview, its plan and its run share one,
	// so that an edit is planned once (see callEnv).
	callsMu sync.Mutex
	calls   map[string]*tools.Env

	mu  sync.Mutex
	row store.Session
	// project is the latest redacted project instructions.
	project projectCache
	// ext are the skills and prompt commands (extend.go).
	ext extensions
	// seed is the correction seed for the session's model (seedRatio).
	seed ratioSeed
	// ckpt is the session's checkpoint store and snap the scans around
	// its commands (checkpoints.go), made on first use.
	ckpt     *checkpoint.Store
	snap     *checkpoint.Scanner
	ckptOnce sync.Once
	// rewound says the log holds a rewind: view filters it (visible),
	// caching the result for the log's length visibleN.
	rewound       bool
	visibleEvents []event.Event
	visibleN      int
	// events is the log; through cut (the window's start) its events
	// are stubs, but for those stubbable keeps (log.go).
	events []event.Event
	cut    int64
	// held are events written with the next commit (hold); they are the
	// last len(held) of events too.
	held []heldEvent
	// memo carries each assembly's reading of the log to the next, so a
	// model call reads only the events since the last one.
	memo contextwin.Memo
	// turn is the running turn's cancel and done; nil when idle.
	cancel context.CancelFunc
	done   chan struct{}
	// pending says recovery left questions (and, when the editor holds
	// the files, the calls that need them) for AskPending; recovering says
	// AskPending is asking them (and a prompt withdraws them); pendingWhy
	// is why their turn was cut short (the interrupted event's reason).
	pending, recovering bool
	// rewindPending says a rewind a crash cut short waits for AskPending
	// (the editor holds its files).
	rewindPending bool
	pendingWhy    *cut
	// broken is the error of a commit that failed: the log may hold a
	// turn that never finished, which the next use of the session closes
	// (mend) as recovery does after a crash.
	broken error
	// muted drops updates while recovery writes the log before the editor
	// has the session: the replay that follows shows them.
	muted atomic.Bool
	// mcp is the session's MCP servers (nil: none); guarded by mu.
	mcp *mcp.Set
	// ready says the editor has the session: notices are sent, not held.
	ready   bool
	notices []string
	// task is the tool that starts subagents (nil in a child).
	task tools.Tool

	// A child (a subagent's session) runs inside its parent's task call:
	// its tools are the parent's named in allowed, its mode the parent's,
	// and it reaches the editor through cl, which shows its progress on
	// the parent's call.
	parent  *Session
	allowed []string
	cl      Client

	// fs is the watcher, the tool-output cache and the files the model
	// has seen, started on first use (files()); guarded by mu.
	fs        *files
	filesOnce sync.Once

	closeOnce sync.Once
}

func newSession(m *Manager, row store.Session, events []event.Event) (*Session, error) {
	root, err := confine.OpenRoot(row.Cwd, row.AdditionalDirs...)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", row.ID, err)
	}
	root.Hide(m.cfg.Hidden...)
	root.HideOwn(m.cfg.Own...)
	box := tools.Env{Root: root, Locks: m.cfg.Locks}
	if m.cfg.Code != nil {
		box.Code = m.cfg.Code(root.Dirs())
	}
	if m.cfg.DataDir != "" {
		arts, err := tools.NewArtifacts(filepath.Join(m.cfg.DataDir, "artifacts", row.ID))
		if err != nil {
			root.Close()
			return nil, fmt.Errorf("session %s: %w", row.ID, err)
		}
		box.Artifacts = arts
	}
	// The log, not the row, is the truth about pins that change.
	for _, e := range events {
		switch v := e.Payload.(type) {
		case event.SessionStarted:
			row.Mode, row.Model = v.Mode, v.Model
		case event.ModeChanged:
			row.Mode = v.To
		case event.ModelChanged:
			row.Model = v.To
		}
	}
	s := &Session{m: m, root: root, box: box, row: row, events: events}
	// The .env files are not known yet: the space's walk may still run.
	// Prompts and tool calls wait for them (syncSecrets).
	s.sec.cur.Store(redact.New(os.Environ()))
	s.space = m.spaces.Open(root.Dirs())
	if m.cfg.Files != nil && m.cfg.Locks != nil {
		s.box.Buffers = redactedBuffers{editorFiles{m.cfg.Files, row.ID}, s.redactor}
		s.box.Texts = tools.NewBufferTexts()
	}
	s.rewound = hasRewind(events)
	s.box.Results = s.loggedResult
	s.box.Fetched = &tools.Fetched{}
	if row.ParentID == "" {
		s.bg = s.newBackground()
		s.box.Background = s.bg
		s.task = subagent.New(asParent{s})
		s.readExtensions()
		s.tellSettings()
	}
	return s, nil
}

// close stops the session's MCP servers and releases its workspace. It
// may be called more than once.
func (s *Session) close() {
	s.closeOnce.Do(func() {
		if s.bg != nil {
			// Before the workspace is released: their ends are recorded.
			s.bg.Close("the session ended")
		}
		s.mu.Lock()
		set := s.mcp
		s.mu.Unlock()
		set.Close()
		// A call that comes after the close gets no watcher.
		s.filesOnce.Do(func() {
			s.mu.Lock()
			s.fs = unwatched()
			s.mu.Unlock()
		})
		s.mu.Lock()
		fs := s.fs
		s.mu.Unlock()
		fs.close()
		s.m.spaces.Close(s.space)
		s.closeSnapshot()
		s.root.Close()
	})
}

// client is how the session reaches the editor: directly, or for a
// running child through its parent's task call.
func (s *Session) client() Client {
	if s.cl != nil {
		return s.cl
	}
	return s.m.cfg.Client
}

// tools returns every tool the session may offer, whatever the mode: the
// built-ins, task, skill, the code tools and the MCP servers' tools; a child's are the parent's
// it was given.
func (s *Session) tools() []tools.Tool {
	if s.parent != nil {
		return subagent.Tools(s.parent.tools(), s.allowed)
	}
	s.mu.Lock()
	set := s.mcp
	s.mu.Unlock()
	out := slices.Clone(s.m.cfg.Tools)
	if s.task != nil {
		out = append(out, s.task)
	}
	if sk := s.skillTool(); sk != nil {
		out = append(out, sk)
	}
	if code, ok := s.box.Code.(tools.CodeAsker); ok && code.Offered() {
		// Only where a language server is found: a workspace without one
		// is offered what it was before.
		out = append(out, tools.CodeTools()...)
	}
	return append(out, set.Tools()...)
}

// toolsByName are the session's tools (tools) by name.
func (s *Session) toolsByName() map[string]tools.Tool {
	byName := map[string]tools.Tool{}
	for _, t := range s.tools() {
		byName[t.Name()] = t
	}
	return byName
}

// replayConfig is what the session's events are shown with: its tools,
// the preview Env of a replay, its images and its redactor. The live
// show adds the calls' own Env (CallEnv), a replay of the stored log
// says so (Logged).
func (s *Session) replayConfig() replay.Config {
	// A replay previews from the disk, never the editor's buffers: it runs
	// while the editor waits for session/load's answer and cannot answer
	// a question (and the cards of past calls show what was recorded).
	env := s.env("")
	env.Buffers = nil
	return replay.Config{SessionID: s.row.ID, Tools: s.toolsByName(), Env: env, Image: s.loadImage, Redactor: s.redactor()}
}

// registry is the registry of the session's mode over its tools now,
// built once per mode and tool set.
func (s *Session) registry() *tools.Registry { return s.regs.Get(s.Mode(), s.tools()) }

// env returns the sandbox environment of the call with idempotency key.
func (s *Session) env(key string) *tools.Env {
	e := s.box
	e.Key = key
	e.Redactor = s.redactor()
	return &e
}

// callEnv is the Env of one call of the running turn: its live card,
// Preview, Plan and Run share it, so that the input is validated and
// decoded once and an edit planned once (the plan is read, hashed,
// diffed and redacted: 4–5 plans per edit of a 2,000-line file cost
// 160–770 ms). endCalls forgets them when the turn ends.
//
// An Env is kept only while its redactor is the session's: a call's card
// is shown (and its Env made) when the model's message comes, and a .env
// file an earlier call of that message makes, or the user writes while
// the call waits for approval, swaps in a new redactor (syncSecrets). The
// Env that replaces it drops what the old one decoded and planned (a plan
// is redacted) but keeps the call's hooks.
func (s *Session) callEnv(key string) *tools.Env {
	r := s.redactor()
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	old, ok := s.calls[key]
	if ok && old.Redactor == r {
		return old
	}
	if s.calls == nil {
		s.calls = map[string]*tools.Env{}
	}
	e := s.env(key).ForCall(key)
	e.Redactor = r
	if ok {
		e.Live, e.Waiting = old.Live, old.Waiting
	}
	s.calls[key] = e
	return e
}

// endCall forgets the Env of a call that has its result.
func (s *Session) endCall(key string) {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	delete(s.calls, key)
}

// endCalls forgets the Envs of a turn's calls, also those that never ran
// (the turn was cancelled after the model asked for them).
func (s *Session) endCalls() {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	clear(s.calls)
}

// ID returns the session id.
func (s *Session) ID() string { return s.row.ID }

// Info describes the session.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return infoOf(s.row)
}

// Events returns the session's log: the committed events, not the held
// ones. Those before the window's start are stubs (*event.Stub) but for
// the kinds Kept; Log reads them whole. The slice is the session's own,
// clipped: the session never changes an event it has handed out (it
// copies the log to make stubs), and appending to it copies.
func (s *Session) Events() []event.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.events) - len(s.held)
	return s.events[:n:n]
}

// Mode returns the current mode; a running child's is its parent's.
func (s *Session) Mode() permission.Mode {
	if s.parent != nil {
		return s.parent.Mode()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return permission.Mode(s.row.Mode)
}

// append commits payloads to the log and the cache in one transaction,
// after the events the session holds (hold), which are written first.
// It ignores ctx's cancellation: what happened must be recorded even when
// the turn that produced it is being cancelled. A tool's start and result
// are indexed by their idempotency key in the same transaction, so a call
// can never be recorded as started, or finished, twice. It returns the
// events of payloads; appendAll returns the held ones written with them too.
func (s *Session) append(ctx context.Context, payloads ...event.Payload) ([]event.Event, error) {
	all, err := s.appendAll(ctx, payloads...)
	if err != nil {
		return nil, err
	}
	s.show(ctx, streamed, all[:len(all)-len(payloads)])
	return all[len(all)-len(payloads):], nil
}

func (s *Session) appendAll(ctx context.Context, payloads ...event.Payload) ([]event.Event, error) {
	recs, err := s.records(payloads)
	if err != nil {
		return nil, err
	}
	// Hold the lock across the write so the cache keeps the log's order.
	s.mu.Lock()
	defer s.mu.Unlock()
	// The held events are at the end of s.events already.
	held := s.held
	s.held = nil
	committed := len(s.events) - len(held)
	if len(held) > 0 {
		recs = append(slices.Clip(heldRecords(held)), recs...)
		payloads = append(heldPayloads(held), payloads...)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	stored, err := s.m.cfg.Store.Append(context.WithoutCancel(ctx), s.row.ID, recs...)
	// dropHeld forgets the held events that were not written. The log is
	// copied, not cut in place: a view the turn is reading may hold them,
	// and the next events would be written over them.
	dropHeld := func(err error) {
		s.broken = err
		s.events = slices.Clone(s.events[:committed])
		// The memo (and the filtered view) may have read the held events,
		// whose seqs the next events will take.
		s.memo.Reset()
		s.visibleN = -1
	}
	if err != nil {
		dropHeld(err)
		return nil, fmt.Errorf("%w: record %s: %w", ErrNotRecorded, payloads[0].Kind(), err)
	}
	for i, h := range held {
		if stored[i].Seq != h.ev.Seq {
			// The held event's seq named its tool calls' keys already.
			err := fmt.Errorf("%s was held as event %d but written as %d: another writer appended to the session", h.ev.Kind(), h.ev.Seq, stored[i].Seq)
			dropHeld(err)
			return nil, fmt.Errorf("%w: %w", ErrNotRecorded, err)
		}
	}
	out := make([]event.Event, len(stored))
	for i, r := range stored {
		out[i] = event.Event{Seq: r.Seq, Time: msTime(r.CreatedAt), Tokens: r.Tokens, Payload: payloads[i]}
	}
	// The held events stay as they were held (with the time of holding,
	// not of the commit): a view the turn is reading may hold them.
	copy(out, s.events[committed:])
	s.events = append(s.events, out[len(held):]...)
	if through, ok := compacted(out); ok && through > s.cut && s.row.ParentID == "" && !s.m.keepWhole {
		// The window starts later: what it no longer shows becomes stubs.
		s.events, s.cut = stubbed(s.events, through), through
		s.visibleN = -1
	}
	s.row.UpdatedAt = stored[len(stored)-1].CreatedAt
	s.m.cfg.Fault.committed(len(out))
	return out, nil
}

// records stamps payloads and encodes them with their token counts.
func (s *Session) records(payloads []event.Payload) ([]store.Record, error) {
	return s.recordsCounted(payloads, nil)
}

// recordsCounted is records for payloads whose token counts are known
// (counts[i] >= 0): a tool result's output was counted when it was cut.
func (s *Session) recordsCounted(payloads []event.Payload, counts []int) ([]store.Record, error) {
	info := s.Info()
	recs := make([]store.Record, len(payloads))
	for i, p := range payloads {
		// Redacted here, before the event is held, written, shown or
		// read by the next request (see redact.go).
		p = event.Stamp(redactEvent(s.redactor(), p))
		payloads[i] = p
		n := -1
		if i < len(counts) {
			n = counts[i]
		}
		r, err := s.m.record(info.Cwd, info.Model, p, n)
		if err != nil {
			return nil, err
		}
		r.Key = event.CallKey(p)
		recs[i] = r
	}
	return recs, nil
}

// heldEvent is an event the session will write with its next commit: it
// has its seq already (the log's next), not yet its place on disk.
type heldEvent struct {
	ev  event.Event
	rec store.Record
}

func heldRecords(h []heldEvent) []store.Record {
	out := make([]store.Record, len(h))
	for i, e := range h {
		out[i] = e.rec
	}
	return out
}

func heldPayloads(h []heldEvent) []event.Payload {
	out := make([]event.Payload, len(h))
	for i, e := range h {
		out[i] = e.ev.Payload
	}
	return out
}

// hold keeps payloads to be written, and shown, with the session's next
// commit, and returns them as events with the seqs they will have. Every
// commit costs an fsync; holding lets the turn loop write an iteration in
// two (see docs/durability.md, "What is committed when"). Only events
// whose loss in a crash the recovery already handles may be held: nothing
// may act on a held event's being on disk.
func (s *Session) hold(payloads ...event.Payload) ([]event.Event, error) {
	recs, err := s.records(payloads)
	if err != nil {
		return nil, err
	}
	return s.holdRecords(payloads, recs), nil
}

// holdCounted holds one payload whose token count is known.
func (s *Session) holdCounted(p event.Payload, tokens int) ([]event.Event, error) {
	payloads := []event.Payload{p}
	recs, err := s.recordsCounted(payloads, []int{tokens})
	if err != nil {
		return nil, err
	}
	return s.holdRecords(payloads, recs), nil
}

func (s *Session) holdRecords(payloads []event.Payload, recs []store.Record) []event.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := int64(1)
	if len(s.events) > 0 {
		next = s.events[len(s.events)-1].Seq + 1
	}
	at := time.Now().Truncate(time.Millisecond)
	out := make([]event.Event, len(payloads))
	for i, p := range payloads {
		out[i] = event.Event{Seq: next + int64(i), Time: at, Tokens: recs[i].Tokens, Payload: p}
		s.held = append(s.held, heldEvent{ev: out[i], rec: recs[i]})
	}
	s.events = append(s.events, out...)
	return out
}

// flush commits the held events, if any, and shows them.
func (s *Session) flush(ctx context.Context) error {
	_, err := s.commit(ctx, streamed)
	return err
}

// loggedResult is the output of the tool result at seq, as the model saw
// it (read_artifact's "r<seq>"), from the store when the session holds a
// stub of it.
func (s *Session) loggedResult(seq int64) (string, error) {
	events := s.view()
	i := sort.Search(len(events), func(i int) bool { return events[i].Seq >= seq })
	if i < len(events) && events[i].Seq == seq {
		var out *string
		err := s.eachWhole(context.Background(), events[i:i+1], 0, seq, []event.Kind{event.KindToolResult}, func(e event.Event) error {
			if r, ok := e.Payload.(event.ToolResult); ok {
				out = &r.Output
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		if out != nil {
			return *out, nil
		}
	}
	return "", fmt.Errorf("r%d names no tool result in this session: use the id a dropped output's placeholder named", seq)
}

// view is the log as the next model request sees it: the committed
// events, then the held ones (hold keeps them at the end of s.events). It
// copies nothing: the slice is clipped, so nothing appends through it,
// and s.events is only ever appended to past it (a failed commit copies
// the log rather than cut it).
//
// After a rewind it is the log without what the rewind went back over
// (visible), brought up to date with what was appended since.
func (s *Session) view() []event.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.events[:len(s.events):len(s.events)]
	if !s.rewound {
		return all
	}
	switch {
	case s.visibleN == len(all):
	case s.visibleN >= 0 && s.visibleN < len(all) && !hasRewind(all[s.visibleN:]):
		// Appended since, no rewind among them: all visible. The session
		// keeps the slice uncut and hands out clipped views, so appending
		// here never changes what a caller holds.
		s.visibleEvents = append(s.visibleEvents, all[s.visibleN:]...)
		s.visibleN = len(all)
	default:
		s.visibleEvents, s.visibleN = visible(all), len(all)
	}
	return s.visibleEvents[:len(s.visibleEvents):len(s.visibleEvents)]
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// commit appends payloads as one write, then sends the editor what the
// Replayer (package replay) makes of them, so that the live session shows what a replay
// will. hide, if not nil, keeps back the updates the editor has shown
// already (typed, streamed). Every event the editor sees is sent here.
//
// The held events written first are shown too, each with the hiding it
// was held with, and commit returns the events of payloads alone.
func (s *Session) commit(ctx context.Context, hide hidden, payloads ...event.Payload) ([]event.Event, error) {
	all, err := s.appendAll(ctx, payloads...)
	if err != nil {
		return nil, err
	}
	flushed := all[:len(all)-len(payloads)]
	s.show(ctx, streamed, flushed)
	evs := all[len(flushed):]
	s.show(ctx, hide, evs)
	return evs, nil
}

// show sends the Replayer's updates for events just appended: the second
// half of commit, for the one caller that must act between the two.
func (s *Session) show(ctx context.Context, hide hidden, evs []event.Event) {
	c := s.replayConfig()
	c.CallEnv = s.callEnv // the live card previews with the call's own Env
	r := replay.New(c)
	for _, e := range evs {
		for _, u := range r.Updates(ctx, e) {
			if hide == nil || !hide(e, u) {
				s.send(ctx, u)
			}
		}
	}
}

// hidden says which of an event's updates a commit does not send.
type hidden func(event.Event, acp.SessionUpdate) bool

// typed hides the user's own text: the editor shows what the user typed.
// What was redacted in it is still said.
func typed(_ event.Event, u acp.SessionUpdate) bool { return u.UserMessageChunk != nil }

// streamed hides what the stream showed already: an answer's thinking and
// text (its tool calls are new), and an interrupted answer altogether,
// whose fragments and mark were shown as soon as the stream stopped.
func streamed(e event.Event, u acp.SessionUpdate) bool {
	return e.Kind().Facts().Streamed && u.ToolCall == nil
}

// send delivers an update to the editor. A failed delivery (the editor is
// gone) is logged, not fatal: the log already holds the truth.
func (s *Session) send(ctx context.Context, u acp.SessionUpdate) {
	if s.muted.Load() {
		return
	}
	if err := s.client().Update(context.WithoutCancel(ctx), s.row.ID, u); err != nil {
		s.m.log.Debug("update not delivered", "session", s.row.ID, "err", err)
	}
}

// Replay sends the whole history to the editor as updates, after the
// session's title.
func (s *Session) Replay(ctx context.Context) error {
	if title := s.Info().Title; title != "" {
		if err := s.m.cfg.Client.Update(ctx, s.row.ID, acp.SessionUpdate{SessionInfoUpdate: &acp.SessionInfoUpdate{Title: &title}}); err != nil {
			return fmt.Errorf("replay session %s: %w", s.row.ID, err)
		}
	}
	events := s.Events()
	c := s.replayConfig()
	c.Logged = true
	r := replay.New(c)
	// What the session holds as stubs is read from the store as it goes,
	// a batch at a time.
	return s.eachWhole(ctx, events, 0, lastSeq(events), nil, func(e event.Event) error {
		for _, u := range r.Updates(ctx, e) {
			if err := s.m.cfg.Client.Update(ctx, s.row.ID, u); err != nil {
				return fmt.Errorf("replay session %s: %w", s.row.ID, err)
			}
		}
		return nil
	})
}

// Cancel stops the running turn, if any. It returns at once; the turn
// records how it ended before Prompt returns.
func (s *Session) Cancel() {
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// withdrawPending cancels the re-asking of recovered questions, if it
// runs, and waits until that mini-turn has recorded how it ended.
// Questions not asked yet are withdrawn the same way.
func (s *Session) withdrawPending() {
	s.mu.Lock()
	unasked := s.pending && s.cancel == nil
	s.mu.Unlock()
	if unasked {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s.AskPending(ctx)
	}
	s.mu.Lock()
	cancel, done, recovering := s.cancel, s.done, s.recovering
	s.mu.Unlock()
	if recovering {
		cancel()
		<-done
	}
}

// wait blocks until no turn runs.
func (s *Session) wait() {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

// waitUntil is wait with a deadline; it reports whether the turn ended.
func (s *Session) waitUntil(deadline time.Time) bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return true
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// SetMode switches the session's tool registry and records it.
func (s *Session) SetMode(ctx context.Context, mode string) error {
	to, err := permission.ParseMode(mode)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	from := s.Mode()
	if from == to {
		return nil
	}
	// Not commit: the mode is changed before the editor hears of it.
	evs, err := s.append(ctx, event.ModeChanged{From: string(from), To: string(to)})
	if err != nil {
		return err
	}
	// The row is an index of the log; the event above is what counts.
	if err := s.m.cfg.Store.UpdateSession(ctx, s.row.ID, string(to), "", ""); err != nil {
		s.m.log.Warn("session index not updated", "session", s.row.ID, "err", err)
	}
	s.mu.Lock()
	s.row.Mode = string(to)
	s.mu.Unlock()
	s.show(ctx, nil, evs)
	if to == permission.ModeReadOnly {
		// Read-only promises no writes: a watcher or server left running
		// would go on changing the workspace.
		s.stopBackgroundTelling("the session was switched to read-only mode", "read-only mode",
			", since it could go on changing the workspace", ", and a rewind can put it back")
	}
	return nil
}

// SetModel changes the session's pinned model, as the editor asked, and
// records it: a model is never changed silently.
func (s *Session) SetModel(ctx context.Context, spec string) error {
	spec = strings.TrimSpace(spec)
	if _, _, err := provider.ParseModel(spec); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	from := s.Info().Model
	if from == spec {
		return nil
	}
	// Refuse a model that cannot be opened (unknown provider, no key), so
	// the session is not left pinned to something unusable.
	if _, err := s.m.cfg.OpenModel(ctx, spec, s.Info().Cwd); err != nil {
		return fmt.Errorf("%w: model %q cannot be used: %v", ErrInvalid, spec, err)
	}
	return s.pinModel(ctx, from, spec)
}

// pinModel records a change of the pinned model.
func (s *Session) pinModel(ctx context.Context, from, to string) error {
	if _, err := s.append(ctx, event.ModelChanged{From: from, To: to}); err != nil {
		return err
	}
	// The row is an index of the log; the event above is what counts.
	if err := s.m.cfg.Store.UpdateSession(ctx, s.row.ID, "", to, ""); err != nil {
		s.m.log.Warn("session index not updated", "session", s.row.ID, "err", err)
	}
	s.mu.Lock()
	s.row.Model = to
	s.mu.Unlock()
	s.m.log.Info("model changed", "session", s.row.ID, "from", from, "to", to)
	return nil
}

// redactPrompt replaces the secrets in a prompt: in what the user typed,
// the values of bridle's secret-named variables and of the workspace's
// .env files and the token formats that are never ordinary text
// (redact.RedactPrompt); in the files the editor embedded, everything a
// file read would lose (redact.Redact). Images are left as they are. It
// returns the kind of each secret replaced.
func (s *Session) redactPrompt(content []event.Content) ([]event.Content, []string) {
	r := s.redactor()
	var kinds []string
	out := make([]event.Content, len(content))
	for i, c := range content {
		var k []string
		if c.Type == "resource" {
			c.Text, k = r.RedactKinds(c.Text)
		} else {
			c.Text, k = r.RedactPrompt(c.Text)
		}
		kinds = append(kinds, k...)
		c.URI, k = r.RedactPrompt(c.URI)
		kinds = append(kinds, k...)
		c.Name, k = r.RedactPrompt(c.Name)
		kinds = append(kinds, k...)
		out[i] = c
	}
	return out, kinds
}
