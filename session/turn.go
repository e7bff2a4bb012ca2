package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/display"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/session/replay"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// StopReason says why a turn ended (ACP's stop reasons).
type StopReason string

const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

// Run is a turn in progress.
type Run struct {
	done chan struct{}
	stop StopReason
	err  error
}

// Wait blocks until the turn ends and returns how it ended.
func (r *Run) Wait() (StopReason, error) {
	<-r.done
	return r.stop, r.err
}

// Prompt runs one turn and waits for it: see Start.
func (s *Session) Prompt(ctx context.Context, content []event.Content) (StopReason, error) {
	r, err := s.Start(ctx, content)
	if err != nil {
		return "", err
	}
	return r.Wait()
}

// Start begins one turn: the user's message, then model calls and tool
// calls until the model stops, a budget ends or the turn is cancelled. A
// cancelled turn ends with StopCancelled, not an error. Once Start
// returns, Cancel reaches the turn; ending ctx cancels it too.
func (s *Session) Start(ctx context.Context, content []event.Content) (*Run, error) {
	if len(content) == 0 {
		return nil, fmt.Errorf("%w: the prompt is empty", ErrInvalid)
	}
	if p := s.Info().ParentID; p != "" {
		return nil, fmt.Errorf("%w: session %s is a subagent's (started by session %s): its log can be read and replayed, but prompts go to the parent session", ErrInvalid, s.row.ID, p)
	}
	if err := s.mend(ctx, false); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s.withdrawPending()
	s.mu.Lock()
	if s.cancel != nil {
		s.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("%w (%s): wait for it to finish or cancel it with session/cancel", ErrBusy, s.row.ID)
	}
	r := &Run{done: make(chan struct{})}
	s.cancel, s.done = cancel, r.done
	s.mu.Unlock()
	go func() {
		defer cancel()
		t := &turn{s: s}
		r.stop, r.err = t.run(ctx, content)
		r.err = reported(t.stopped(ctx, r.err))
		s.endCalls()
		s.mu.Lock()
		s.cancel, s.done = nil, nil
		s.mu.Unlock()
		close(r.done)
	}()
	return r, nil
}

type turn struct {
	s    *Session
	prov provider.Provider
	reg  *tools.Registry
	// tail holds events that finish commits together with turn_finished,
	// so ending a turn costs one commit.
	tail []event.Payload
	// budget bounds a subagent's turn; zero fields: the Manager's limit
	// and no token limit.
	budget budget
	// iters and used count model calls and the tokens they processed.
	iters, used int
	// prompt is the number of the prompt this turn answers (from 1), 0
	// until promptNumber counts it.
	prompt int
	// spent says the turn stopped because its budget ran out.
	spent bool
	// sent is the size of the last request, as assembled.
	sent int
	// hookNotes are what the PreToolUse hooks of a call said, by its
	// key, for its result (postToolHooks).
	hookNotes map[string]string
	// hooks are the settings' hooks, read once for the turn (hooksFor).
	hooks turnHooks
}

// budget bounds one turn.
type budget struct {
	// Turns bounds the model calls, Tokens the tokens they process (input,
	// cached input and output, as the provider reports them).
	Turns, Tokens int
}

// run runs the turn (loop), then writes what the loop still holds: a
// path that stopped without finish must not drop a held event.
func (t *turn) run(ctx context.Context, content []event.Content) (StopReason, error) {
	stop, err := t.loop(ctx, content)
	if ferr := t.s.flush(ctx); ferr != nil {
		return "", errors.Join(err, ferr)
	}
	return stop, err
}

func (t *turn) loop(ctx context.Context, content []event.Content) (StopReason, error) {
	s := t.s
	if err := s.finishPendingRewind(ctx); err != nil {
		return "", err
	}
	if s.parent == nil && s.readExtensions() {
		s.announceCommands(ctx)
	}
	if s.parent == nil {
		s.tellSettings()
	}
	// A prompt command is expanded before anything counts or records
	// the prompt: the model sees, and the log keeps, its text.
	content, use := s.expandCommand(content)
	// Images are checked before anything else: the log only ever refers
	// to them, and their size counts as the formula says.
	content, images, err := s.checkImages(ctx, content, t.specFor())
	if err != nil && ctx.Err() != nil {
		// Cancelled while another prompt's image was decoded: nothing
		// was recorded.
		return StopCancelled, nil
	}
	if err != nil {
		return "", err
	}
	if err := t.checkSize(content); err != nil {
		return "", err
	}
	// Secrets the user pasted are replaced before anything records or
	// sends the prompt: the log, the title, the model and the replay
	// only ever see the markers. The workspace's .env files count from
	// the first prompt on: a session just opened waits for their list.
	if err := s.syncSecrets(ctx); ctx.Err() != nil {
		return StopCancelled, nil
	} else if err != nil {
		// The prompt goes on with the values known; each tool call waits
		// again, and is not run without the list.
		s.notice(err.Error())
	}
	content, redacted := s.redactPrompt(content)
	if use != nil {
		use.Arguments, _ = s.redactor().RedactPrompt(use.Arguments)
	}
	// bridle's own commands are what the user typed, never what a prompt
	// command's file expands to: a repository's file saying "/decision
	// …" or "/rewind 1" must not act as the user.
	builtin := s.parent == nil && use == nil
	if p, ok := command(content); ok && builtin {
		return t.pin(ctx, withRedacted(p, redacted))
	}
	if n, ok, err := rewindCommand(content); ok && builtin {
		if err != nil {
			return "", err
		}
		if n == 0 {
			// A question about the log, not a turn: nothing is recorded.
			ps, err := s.Prompts(ctx)
			if err != nil {
				return "", err
			}
			s.send(ctx, replay.AgentText(promptsText(ps)))
			return StopEndTurn, nil
		}
		return t.rewind(ctx, n)
	}
	if n, ok, err := forkCommand(content); ok && builtin {
		if err != nil {
			return "", err
		}
		info, err := s.m.Fork(ctx, s.row.ID, n)
		if err != nil {
			return "", err
		}
		// Nothing happens in this session: nothing is recorded here.
		s.send(ctx, replay.AgentText(fmt.Sprintf("Forked before prompt %d as session %s (%s): open it from the session list; this session goes on as it was.", n, info.ID, info.Title)))
		return StopEndTurn, nil
	}
	if name, _, ok := slashCommand(content); ok && name == "/skills" && builtin {
		// A question about the session, not a turn: nothing is recorded.
		s.send(ctx, replay.AgentText(s.skillsText()))
		return StopEndTurn, nil
	}
	added, refused, err := t.promptHooks(ctx, content)
	if err != nil {
		return "", err
	}
	if len(refused) > 0 {
		// Not recorded as a prompt: the model never sees it.
		s.send(ctx, replay.AgentText("A hook of yours refused this prompt, which was not sent: "+strings.Join(refused, "; ")))
		return StopRefusal, nil
	}
	if err := s.logPrompt(ctx, images, event.UserMessage{Content: content, Redacted: redacted, Command: use, HookContext: added}); err != nil {
		return "", err
	}
	if s.Info().Title == "" {
		// The title is known from the first prompt: no model call names
		// it, and the editor hears it at once.
		title := titleOf(content)
		if err := s.m.cfg.Store.UpdateSession(ctx, s.row.ID, "", "", title); err == nil {
			s.mu.Lock()
			s.row.Title = title
			s.mu.Unlock()
			s.send(ctx, acp.SessionUpdate{SessionInfoUpdate: &acp.SessionInfoUpdate{Title: &title}})
		}
	}
	prov, err := t.model(ctx)
	if err != nil {
		return t.finish(ctx, "", err)
	}
	t.prov = prov
	// The first request's catalogue includes the MCP servers' tools.
	if err := s.mcpSet().Ready(ctx); err != nil {
		return t.finish(ctx, StopCancelled, nil)
	}
	maxIter := s.m.cfg.MaxIterations
	if t.budget.Turns > 0 && t.budget.Turns < maxIter {
		maxIter = t.budget.Turns
	}
	for iter := 1; iter <= maxIter; iter++ {
		if t.budget.Tokens > 0 && t.used >= t.budget.Tokens {
			t.spent = true
			return t.finish(ctx, StopMaxTokens, nil)
		}
		t.reg = s.registry()
		if err := t.noteChanges(ctx); err != nil {
			return "", err
		}
		resp, err := t.call(ctx)
		t.iters++
		if errors.Is(err, ErrNotRecorded) {
			// The commit before the request (the last results and
			// context_assembled) failed: nothing more can be recorded.
			return "", err
		}
		if err != nil {
			return t.finish(ctx, "", err)
		}
		t.used += resp.Usage.InputTokens + resp.Usage.CacheReadTokens + resp.Usage.CacheWriteTokens + resp.Usage.OutputTokens
		if resp.Usage.InputTokens+resp.Usage.CacheReadTokens+resp.Usage.CacheWriteTokens == 0 {
			// The provider did not say what it read: count what was sent.
			t.used += t.sent
		}
		// Held: written with the next commit (tool_started, an approval
		// request, or turn_finished), which is on disk before any tool runs.
		evs, err := s.hold(event.AssistantMessage{
			Text: resp.Text, Thinking: resp.Thinking, Signature: resp.Signature,
			ToolCalls: toEventCalls(resp.ToolCalls), StopReason: string(resp.StopReason),
			Usage: event.Usage(resp.Usage),
		})
		if err != nil {
			return "", err
		}
		asst := evs[0]
		if len(resp.ToolCalls) == 0 {
			return t.finish(ctx, stopOf(resp.StopReason), nil)
		}
		for i, c := range resp.ToolCalls {
			if ctx.Err() != nil {
				t.cancelCall(callKey(s.row.ID, asst.Seq, i), c)
				continue
			}
			if err := t.runCall(ctx, asst.Seq, i, c); err != nil {
				return "", err
			}
		}
		if ctx.Err() != nil {
			return t.finish(ctx, StopCancelled, nil)
		}
	}
	t.spent = t.budget.Turns > 0
	return t.finish(ctx, StopMaxTurnRequests, nil)
}

// model opens the session's pinned model, retrying failed calls and
// logging each failed attempt. A session created before any provider was
// configured pins the default on its first prompt.
func (t *turn) model(ctx context.Context) (provider.Provider, error) {
	s := t.s
	info := s.Info()
	spec := info.Model
	if spec == "" && s.m.cfg.DefaultModel != nil {
		if spec = s.m.cfg.DefaultModel(info.Cwd); spec != "" {
			if err := s.pinModel(ctx, "", spec); err != nil {
				return nil, err
			}
		}
	}
	p, err := s.m.cfg.OpenModel(ctx, spec, info.Cwd)
	if err != nil {
		return nil, err
	}
	policy := s.m.cfg.Retry
	// The configured OnRetry (a headless run's progress line) is told
	// too, after the attempt is recorded.
	told := policy.OnRetry
	policy.OnRetry = func(attempt int, err error, wait time.Duration) {
		if told != nil {
			defer told(attempt, err, wait)
		}
		pe := event.ProviderError{Provider: p.Name(), ErrKind: "internal", Message: err.Error(), Attempt: attempt, Retryable: true}
		if e, ok := provider.AsError(err); ok {
			pe.ErrKind, pe.Status, pe.Message = string(e.Kind), e.Status, fmt.Sprintf("%s; retrying in %s", e.Error(), wait.Round(time.Millisecond))
		}
		if _, err := s.append(ctx, pe); err != nil {
			s.m.log.Warn("provider error not recorded", "session", s.row.ID, "err", err)
		}
	}
	return provider.WithRetry(p, policy), nil
}

// call makes one model request from the log and streams the answer to the
// editor. On cancel or failure the partial answer is recorded as an
// interrupted event and the error returned.
func (t *turn) call(ctx context.Context) (provider.Response, error) {
	s := t.s
	a, err := t.assemble(ctx)
	if err != nil {
		return provider.Response{}, err
	}
	req := s.withImages(a.Request)
	var c provider.Collector
	var streamErr error
	// The answer is shown redacted as it comes, all but what more text
	// could still make part of a secret (redact.Chat), and recorded as
	// it was shown: this is its only redaction (see redact.go).
	r := s.redactor()
	text, thought := redact.NewChat(r), redact.NewChat(r)
	for d, err := range t.prov.Stream(ctx, req) {
		if err != nil {
			streamErr = err
			break
		}
		c.Add(d)
		switch d.Kind {
		case provider.DeltaText:
			s.sendText(ctx, replay.AgentThought, thought.Close()) // the thinking is over
			s.sendText(ctx, replay.AgentText, text.Write(d.Text))
		case provider.DeltaThinking:
			s.sendText(ctx, replay.AgentThought, thought.Write(d.Text))
		}
	}
	s.sendText(ctx, replay.AgentThought, thought.Close())
	s.sendText(ctx, replay.AgentText, text.Close())
	if streamErr == nil && ctx.Err() != nil {
		streamErr = ctx.Err()
	}
	resp := c.Response()
	resp.Text = text.Text()
	if thinking := thought.Text(); thinking != resp.Thinking {
		// The provider checks a signed thinking block against its
		// signature: the redacted one is kept unsigned, and not sent back.
		resp.Thinking, resp.Signature = thinking, ""
	}
	if streamErr == nil {
		return resp, nil
	}
	reason := "cancelled"
	if ctx.Err() == nil {
		reason = "provider_error"
	}
	if resp.Text != "" || resp.Thinking != "" || reason == "cancelled" {
		// Recorded by finish, in the same commit as the turn's end. The
		// fragments were streamed already; only the mark is new.
		t.tail = append(t.tail, event.Interrupted{Text: resp.Text, Thinking: resp.Thinking, Reason: reason})
		s.send(ctx, replay.AgentText(replay.InterruptedMark))
	}
	return resp, streamErr
}

// finish records how the turn ended. A cancellation is a stop reason; a
// provider failure is recorded and returned as the error.
func (t *turn) finish(ctx context.Context, stop StopReason, err error) (StopReason, error) {
	s := t.s
	if err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)) {
		stop, err = StopCancelled, nil
	}
	if err != nil {
		pe := event.ProviderError{Provider: "bridle", ErrKind: "internal", Message: err.Error(), Final: true}
		if e, ok := provider.AsError(err); ok {
			pe = event.ProviderError{Provider: e.Provider, ErrKind: string(e.Kind), Status: e.Status, Message: e.Error(), Retryable: e.Retryable, Final: true}
		}
		if _, aerr := s.commit(ctx, streamed, append(t.tail, pe, event.TurnFinished{StopReason: "error", Iterations: t.iters})...); aerr != nil {
			return "", errors.Join(err, aerr)
		}
		return "", err
	}
	if _, aerr := s.commit(ctx, streamed, append(t.tail, event.TurnFinished{StopReason: string(stop), Iterations: t.iters})...); aerr != nil {
		return "", aerr
	}
	if stop == StopEndTurn {
		if err := t.stopHooks(ctx, stop); err != nil {
			return "", err
		}
	}
	return stop, nil
}

// sendText sends a fragment of the answer, unless it is empty.
func (s *Session) sendText(ctx context.Context, as func(string) acp.SessionUpdate, text string) {
	if text != "" {
		s.send(ctx, as(text))
	}
}

func stopOf(r provider.StopReason) StopReason {
	switch r {
	case provider.StopMaxTokens:
		return StopMaxTokens
	case provider.StopRefusal:
		return StopRefusal
	}
	return StopEndTurn
}

func toEventCalls(calls []provider.ToolCall) []event.ToolCall {
	out := make([]event.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = event.ToolCall{ID: c.ID, Name: c.Name, Input: c.Input}
	}
	return out
}

func catalogue(r *tools.Registry) []provider.Tool {
	var out []provider.Tool
	for _, t := range r.Tools() {
		out = append(out, provider.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.Schema()})
	}
	return out
}

// modelID strips the provider prefix from a model spec.
func modelID(spec string) string {
	for i := 0; i < len(spec); i++ {
		if spec[i] == '/' {
			return spec[i+1:]
		}
	}
	return spec
}

// titleOf is a prompt's first line as a label: the session's title when
// it is the first, an entry of /rewind's list.
func titleOf(content []event.Content) string {
	text := event.UserMessage{Content: content}.Text()
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	return clipTitle(display.Label(text), store.MaxTitle)
}

// clipTitle cuts text to max characters, ending with "..." when cut.
func clipTitle(text string, max int) string {
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	n := 0
	for i := range text {
		if n == max-3 {
			return text[:i] + "..."
		}
		n++
	}
	return text
}
