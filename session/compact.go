package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/session/replay"
)

// assemble builds the next request from the log. Past the compaction
// threshold it compacts first. Either way it records how the request
// fills the window (context_assembled) and tells the editor (usage_update)
// before the request is sent.
func (t *turn) assemble(ctx context.Context) (contextwin.Assembly, error) {
	s := t.s
	w := s.m.window(s.Info().Cwd)
	a, err := w.Assemble(t.input())
	if err != nil {
		return a, err
	}
	if a.Compact {
		before := a.Occupancy.Used()
		card := &compactionCard{t: t}
		switch err := t.compact(ctx, before, card); {
		case ctx.Err() != nil:
			card.end(ctx, acp.ToolCallStatusFailed, "Cancelled.")
			return a, ctx.Err()
		case err != nil:
			// The request fits without compacting; a summarizer that failed
			// must not cost the user the turn. It is recorded, and the next
			// call tries again.
			card.end(ctx, acp.ToolCallStatusFailed, "Not compacted: "+err.Error())
			if rerr := t.summaryFailed(ctx, err); rerr != nil {
				return a, rerr
			}
		default:
			if a, err = w.Assemble(t.input()); err != nil {
				return a, err
			}
			if a.Occupancy.Action != contextwin.ActionSqueeze {
				a.Occupancy.Action = contextwin.ActionCompact
			}
			card.end(ctx, acp.ToolCallStatusCompleted, card.done+fmt.Sprintf(" The window went from %d to %d tokens.", before, a.Occupancy.Used()))
		}
	}
	if _, err := s.commit(ctx, nil, a.Occupancy); err != nil {
		return a, err
	}
	t.sent = a.Occupancy.Used()
	return a, nil
}

// input is the session as the window needs it for the next call.
func (t *turn) input() contextwin.Input {
	s := t.s
	info := s.Info()
	in := contextwin.Input{
		Spec:   info.Model,
		Model:  modelID(info.Model),
		System: s.system(),
		Tools:  catalogue(t.reg),
		Events: s.view(),
		Memo:   &s.memo,
	}
	if !s.memo.Measured() {
		in.SeedRatio = s.seedRatio(info.Model)
	}
	var project string
	if s.m.cfg.Project != nil {
		project = s.m.cfg.Project(info.Cwd)
	}
	if cat := s.catalogue(); cat != "" {
		// The skills' catalogue is the user's and the repository's text
		// too: in the fixed prefix, after the instructions.
		project = strings.TrimSpace(project + "\n\n" + cat)
	}
	if project != "" {
		// Redacted with what the session knows: the .env files below
		// the workspace too.
		in.Project = s.redactProject(project)
	}
	return in
}

// seedRatio is the correction of estimated counts last measured for
// model in another session (0: none), read once per model: a new
// session's first requests are budgeted as the provider counts, not 25 %
// under.
func (s *Session) seedRatio(model string) float64 {
	s.mu.Lock()
	if s.seed.known && s.seed.model == model {
		defer s.mu.Unlock()
		return s.seed.ratio
	}
	s.mu.Unlock()
	ratio := 0.0
	b, err := s.m.cfg.Store.LatestOfModel(context.Background(), model, s.row.ID, string(event.KindContextAssembled))
	if err != nil {
		s.m.log.Debug("no correction seed", "session", s.row.ID, "model", model, "err", err)
	}
	if p, err := event.Decode(event.KindContextAssembled, b); b != nil && err == nil {
		if a := p.(event.ContextAssembled); a.Counter == "estimate" {
			ratio = a.Ratio
		}
	}
	s.mu.Lock()
	s.seed = ratioSeed{model: model, ratio: ratio, known: true}
	s.mu.Unlock()
	return ratio
}

// ratioSeed is a session's seedRatio, for one model.
type ratioSeed struct {
	model string
	ratio float64
	known bool
}

// redactProject redacts the project's instructions with the session's
// redactor, once per text and redactor: they are the same on almost every
// call, and redacting 16 KB costs milliseconds. A redactor knows the same
// values all its life (secrets.go builds a new one when they change).
func (s *Session) redactProject(text string) string {
	r := s.redactor()
	s.mu.Lock()
	c := s.project
	s.mu.Unlock()
	if c.red == r && c.in == text && c.out != "" {
		return c.out
	}
	out := r.Redact(text)
	s.mu.Lock()
	s.project = projectCache{in: text, red: r, out: out}
	s.mu.Unlock()
	return out
}

// projectCache is the latest project text a session redacted.
type projectCache struct {
	in, out string
	red     *redact.Redactor
}

// compact replaces the turns before the last few with a summary made by
// the session's own model from the original events, chunk by chunk, and
// records it as a compaction event. The originals stay in the log.
func (t *turn) compact(ctx context.Context, before int, card *compactionCard) error {
	s := t.s
	in := t.input()
	// The plan reads the originals the session holds as stubs from the
	// store.
	in.Stored = func(after, through int64, kinds []event.Kind, fn func(event.Event) error) error {
		return s.eachWhole(ctx, in.Events, after, through, kinds, fn)
	}
	plan, err := s.m.window(s.Info().Cwd).PlanCompaction(in)
	if err != nil || plan == nil {
		return err
	}
	card.start(ctx, plan.Through, plan.Chunks())
	// Each part is summarized on its own, once; Result composes the
	// answers with the pieces of earlier compactions.
	answers := make([]string, plan.Chunks())
	for k := range plan.Chunks() {
		card.part(ctx, k+1, plan.Chunks())
		var c provider.Collector
		for d, err := range t.prov.Stream(ctx, plan.Request(k)) {
			if err != nil {
				return fmt.Errorf("compact the history (summary part %d of %d): %w", k+1, plan.Chunks(), err)
			}
			c.Add(d)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		answers[k] = c.Response().Text
	}
	c := plan.Result(answers)
	c.WindowBefore = before
	if _, err := s.append(ctx, c); err != nil {
		return err
	}
	card.done = compactionDone(plan.Events, plan.Tokens, c)
	s.m.log.Info("history compacted", "session", s.row.ID, "through", c.Through, "events", plan.Events, "tokens", plan.Tokens, "chunks", plan.Chunks())
	return nil
}

// summaryFailed records a failed compaction as a provider error that did
// not end the turn.
func (t *turn) summaryFailed(ctx context.Context, err error) error {
	s := t.s
	s.m.log.Warn("compaction failed; sending the request without it", "session", s.row.ID, "err", err)
	pe := event.ProviderError{Provider: t.prov.Name(), ErrKind: "compaction", Message: err.Error()}
	if e, ok := provider.AsError(err); ok {
		pe.ErrKind, pe.Status, pe.Retryable = string(e.Kind), e.Status, e.Retryable
	}
	_, aerr := s.append(ctx, pe)
	return aerr
}

// compactionCard shows a compaction in the editor while it runs, as ACP
// allows for work that is no tool call of the model's: a card of kind
// think, "Compacting the history", with "part k of n" as it goes and, at
// the end, what was summarized and what the window freed. Its id derives
// from the last event the summary covers, so a replay shows the same card.
type compactionCard struct {
	t    *turn
	id   string
	done string
}

func (c *compactionCard) start(ctx context.Context, through int64, parts int) {
	c.id = replay.CompactionCardID(through)
	kind, title := acp.ToolKindThink, replay.CompactionTitle
	c.t.s.send(ctx, acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: c.id, Title: title, Kind: &kind,
		Status: replay.Status(acp.ToolCallStatusInProgress)}})
}

func (c *compactionCard) part(ctx context.Context, k, n int) {
	if c.id == "" || n < 2 {
		return
	}
	c.t.s.send(ctx, replay.CallUpdate(acp.ToolCallUpdate{ToolCallID: c.id, Content: replay.Output(fmt.Sprintf("Summarizing part %d of %d…", k, n), false)}))
}

func (c *compactionCard) end(ctx context.Context, st acp.ToolCallStatus, text string) {
	if c.id == "" {
		return // nothing was started: no plan, or it failed before
	}
	c.t.s.send(context.WithoutCancel(ctx), replay.CallUpdate(acp.ToolCallUpdate{ToolCallID: c.id, Status: replay.Status(st), Content: replay.Output(text, false)}))
}

// compactionDone says what a compaction summarized, in the card's words.
func compactionDone(events, tokens int, c event.Compaction) string {
	return fmt.Sprintf("Summarized %d earlier messages and results (%d tokens) through event %d.", events, tokens, c.Through)
}
