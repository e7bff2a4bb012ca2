package session

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/tools"
)

// Hooks are commands the user's settings (or a trusted project's) run at
// points of the loop (config.Hook). Each runs in the box with the limits
// of a command (tools.RunCommand.RunHook), reads the event as JSON on its
// stdin, and answers with its exit code and, optionally, JSON on stdout.
// Each run is recorded as a hook_ran event under a key that names its
// place in the loop: a resumed turn that meets a recorded key takes the
// verdict as recorded and does not run the hook again. A hook that fails,
// hangs or is killed allows: the result says what happened, and the turn
// goes on.

// hookInput is the JSON a hook reads on stdin, named as Claude Code
// names its fields. Its texts are redacted as the model's requests are:
// the hook is the user's, but its output may go anywhere (a log, a
// network host of allow_hosts), and the secrets of the workspace's .env
// files are no business of it.
type hookInput struct {
	SessionID      string          `json:"session_id"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	PermissionMode string          `json:"permission_mode"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	ToolResponse   *hookResponse   `json:"tool_response,omitempty"`
	Prompt         string          `json:"prompt,omitempty"`
	StopReason     string          `json:"stop_reason,omitempty"`
	Source         string          `json:"source,omitempty"`
}

type hookResponse struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error"`
}

// hookAnswer is what a hook may print on stdout (exit 0). Claude Code's
// and Gemini CLI's spellings are read too.
type hookAnswer struct {
	Decision          string `json:"decision"`
	Reason            string `json:"reason"`
	AdditionalContext string `json:"additional_context"`
	Specific          struct {
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
		AdditionalContext        string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// hookVerdict is what the hooks of one point said together: denied by
// any, with every reason and every context.
type hookVerdict struct {
	denied   bool
	reasons  []string
	contexts []string
}

// note is the text the model is given about the hooks' verdict, "" for
// nothing to say.
func (v hookVerdict) note() string {
	var b strings.Builder
	for _, r := range v.reasons {
		fmt.Fprintf(&b, "[a hook of the user refused this: %s]\n", r)
	}
	for _, c := range v.contexts {
		fmt.Fprintf(&b, "[a hook of the user adds: %s]\n", c)
	}
	return b.String()
}

// turnHooks are the session's hooks as one turn sees them: read from the
// settings once, when the turn first meets a hook point, and kept by
// event. Reading the settings (config.Loader.For) checks that none of the
// files they come from changed: ~10-20 stats, which a turn paid at each
// of its hook points, two per tool call, with or without hooks. An edit
// of the settings applies from the next turn (decision: a turn's calls
// run under the hooks it began with, as they run under its mode).
type turnHooks struct {
	once    sync.Once
	byEvent map[string][]config.Hook
}

// hooksFor are the session's hooks for event (and tool, for the tool
// events), from the settings that applied in its directory when the turn
// first met a hook point.
func (t *turn) hooksFor(ev, tool string) []config.Hook {
	s := t.s
	if s.m.cfg.Hooks == nil || s.parent != nil && (ev == config.HookSessionStart || ev == config.HookStop || ev == config.HookUserPromptSubmit) {
		return nil
	}
	t.hooks.once.Do(func() {
		for _, h := range s.m.cfg.Hooks(s.Info().Cwd) {
			if t.hooks.byEvent == nil {
				t.hooks.byEvent = map[string][]config.Hook{}
			}
			t.hooks.byEvent[h.Event] = append(t.hooks.byEvent[h.Event], h)
		}
	})
	var out []config.Hook
	for _, h := range t.hooks.byEvent[ev] {
		if h.Matches(tool) {
			out = append(out, h)
		}
	}
	return out
}

// runner is the run_command tool whose box and limits hooks run with.
func (s *Session) runner() *tools.RunCommand {
	for _, t := range s.m.cfg.Tools {
		if rc, ok := t.(*tools.RunCommand); ok {
			return rc
		}
	}
	return nil
}

// recordedHook is the hook_ran recorded under key, if any. Only the
// events since the last turn's end are read: a hook whose verdict a
// resumed turn may meet ran in that turn (or, for UserPromptSubmit, just
// before it); a Stop hook runs after it ended, once.
func (s *Session) recordedHook(key string) (event.HookRan, bool) {
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		switch h := events[i].Payload.(type) {
		case event.HookRan:
			if h.Key == key {
				return h, true
			}
		case event.TurnFinished:
			return event.HookRan{}, false
		}
	}
	return event.HookRan{}, false
}

// runHooks runs the hooks of in's event (those recorded under base's
// keys already are not run again) and returns their verdict. It returns
// an error only when the log cannot be written.
func (t *turn) runHooks(ctx context.Context, base string, in hookInput) (hookVerdict, error) {
	var v hookVerdict
	hooks := t.hooksFor(in.HookEventName, in.ToolName)
	if len(hooks) == 0 {
		return v, nil
	}
	s := t.s
	in.SessionID, in.Cwd, in.PermissionMode = s.row.ID, s.Info().Cwd, string(s.Mode())
	stdin, err := json.Marshal(in)
	if err != nil {
		return v, fmt.Errorf("the event of a hook: %w", err)
	}
	for i, h := range hooks {
		key := fmt.Sprintf("%s/%s/%d", base, in.HookEventName, i)
		ran, ok := s.recordedHook(key)
		if !ok {
			ran = s.runHook(ctx, key, h, in, stdin)
			evs, err := s.append(ctx, ran)
			if err != nil {
				return v, err
			}
			s.show(ctx, nil, evs) // a card when it refused, added context or failed
			s.m.cfg.Fault.hookRan()
		}
		switch ran.Verdict {
		case "deny":
			v.denied = true
			v.reasons = append(v.reasons, ran.Reason)
		case "context":
			v.contexts = append(v.contexts, ran.Context)
		}
	}
	return v, nil
}

// maxHookText bounds a reason or context a hook gives the model.
const maxHookText = 8 << 10

// runHook runs one hook and reads its answer.
func (s *Session) runHook(ctx context.Context, key string, h config.Hook, in hookInput, stdin []byte) event.HookRan {
	ran := event.HookRan{Key: key, Event: h.Event, Command: h.Command, Whose: h.Whose, File: h.File, Tool: in.ToolName, CallID: in.ToolUseID}
	rc := s.runner()
	if rc == nil {
		ran.Verdict, ran.Reason = "failed", "no sandbox is configured for this session"
		return ran
	}
	env := s.env(key)
	r := rc.RunHook(ctx, env, h.Command, stdin, h.Timeout())
	ran.ExitCode, ran.DurationMS = r.ExitCode, r.Duration.Milliseconds()
	out := strings.TrimSpace(r.Output)
	switch {
	case r.Failed != "":
		ran.Verdict, ran.Reason = "failed", r.Failed
	case r.ExitCode == 2:
		ran.Verdict, ran.Reason = "deny", clipHook(out)
		if ran.Reason == "" {
			ran.Reason = "no reason given"
		}
	case r.ExitCode != 0:
		ran.Verdict, ran.Reason = "failed", fmt.Sprintf("exit status %d: %s", r.ExitCode, clipHook(out))
	default:
		ran.Verdict = "allow"
		var a hookAnswer
		if strings.HasPrefix(out, "{") && json.Unmarshal([]byte(out), &a) == nil {
			decision := strings.ToLower(a.Decision + a.Specific.PermissionDecision)
			reason := a.Reason + a.Specific.PermissionDecisionReason
			ctxText := a.AdditionalContext + a.Specific.AdditionalContext
			switch {
			case decision == "deny" || decision == "block":
				ran.Verdict, ran.Reason = "deny", clipHook(reason)
				if ran.Reason == "" {
					ran.Reason = "no reason given"
				}
			case ctxText != "":
				ran.Verdict, ran.Context = "context", clipHook(ctxText)
			}
		} else if out != "" && (h.Event == config.HookUserPromptSubmit || h.Event == config.HookSessionStart) {
			// As in Claude Code: what these print is context.
			ran.Verdict, ran.Context = "context", clipHook(out)
		}
	}
	if ran.Verdict != "allow" {
		s.m.log.Info("hook", "session", s.row.ID, "event", h.Event, "command", h.Command, "verdict", ran.Verdict, "reason", ran.Reason)
	}
	return ran
}

func clipHook(s string) string {
	if len(s) > maxHookText {
		return s[:maxHookText] + " [cut]"
	}
	return s
}

// preToolHooks runs the PreToolUse hooks of call key. A denial is
// recorded as the call's result (denied is then true); a context is kept
// for the call's result (record).
func (t *turn) preToolHooks(ctx context.Context, key string, c provider.ToolCall) (denied bool, err error) {
	if len(t.hooksFor(config.HookPreToolUse, c.Name)) == 0 {
		return false, nil
	}
	s := t.s
	input, _ := s.recordedInput(key, c)
	v, err := t.runHooks(ctx, key, hookInput{HookEventName: config.HookPreToolUse, ToolName: c.Name, ToolInput: input, ToolUseID: c.ID})
	if err != nil {
		return false, err
	}
	if !v.denied {
		if note := v.note(); note != "" {
			if t.hookNotes == nil {
				t.hookNotes = map[string]string{}
			}
			t.hookNotes[key] = note
		}
		return false, nil
	}
	return true, t.result(ctx, key, event.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Status: "denied",
		Output: "not run: " + v.note()})
}

// postToolHooks runs the PostToolUse hooks of a call whose tool ran (or
// was settled by recovery) and adds what they and the call's PreToolUse
// hooks said to its result. A denial cannot undo the call: its reason is
// given to the model with the output.
func (t *turn) postToolHooks(ctx context.Context, key string, r *event.ToolResult) error {
	note := t.hookNotes[key]
	delete(t.hookNotes, key)
	hooks := len(t.hooksFor(config.HookPostToolUse, r.Name)) > 0
	if hooks && (r.Status == "completed" || r.Status == "failed") && t.s.started(key) {
		var input json.RawMessage
		if seq, i, ok := event.ParseCallKey(key); ok {
			input = t.s.callInput(seq, i)
		}
		v, err := t.runHooks(ctx, key, hookInput{HookEventName: config.HookPostToolUse, ToolName: r.Name, ToolInput: input, ToolUseID: r.CallID,
			ToolResponse: &hookResponse{Output: r.Output, IsError: r.IsError}})
		if err != nil {
			return err
		}
		note += v.note()
	}
	if note != "" {
		if r.Output != "" && !strings.HasSuffix(r.Output, "\n") {
			r.Output += "\n"
		}
		r.Output += note
	}
	return nil
}

// callInput is the input of call i of the assistant message at seq, as
// recorded (redacted).
func (s *Session) callInput(seq int64, i int) json.RawMessage {
	events := s.view()
	j := sort.Search(len(events), func(j int) bool { return events[j].Seq >= seq })
	if j < len(events) && events[j].Seq == seq {
		if a, ok := events[j].Payload.(event.AssistantMessage); ok && i < len(a.ToolCalls) {
			return a.ToolCalls[i].Input
		}
	}
	return nil
}

// started reports whether call key's tool_started is in the log: its
// tool ran, or began to (a call refused before, for its input or its
// mode, has no PostToolUse hooks).
func (s *Session) started(key string) bool {
	events := s.view()
	for i := len(events) - 1; i >= 0; i-- {
		switch v := events[i].Payload.(type) {
		case event.ToolStarted:
			if v.Key == key {
				return true
			}
		case event.UserMessage:
			return false // the call's turn began after this
		}
	}
	return false
}

// promptHooks runs, for a prompt about to be recorded, the session's
// SessionStart hooks (once: before its first prompt, so that session/new
// is never held by a hook) and the UserPromptSubmit hooks. It returns
// what the hooks add for the model with the prompt, including what the
// Stop hooks of the turn before said, or the reasons a hook refused the
// prompt (which is then not recorded, and the model not called).
func (t *turn) promptHooks(ctx context.Context, content []event.Content) (added, refused []string, err error) {
	s := t.s
	if s.parent != nil {
		return nil, nil, nil
	}
	events := s.Events()
	if len(t.hooksFor(config.HookSessionStart, ""))+len(t.hooksFor(config.HookUserPromptSubmit, ""))+len(t.hooksFor(config.HookStop, "")) == 0 {
		// No hook runs for a prompt: what the last turn's Stop hooks said
		// (before the settings lost them) is all there is, and it follows
		// the last prompt. The whole log is not walked at each prompt.
		since := len(events)
		for since > 0 {
			if _, ok := events[since-1].Payload.(event.UserMessage); ok {
				break
			}
			since--
		}
		return hooksSaid(events[since:]), nil, nil
	}
	prompts, since := 0, 0
	for i, e := range events {
		if _, ok := e.Payload.(event.UserMessage); ok {
			prompts, since = prompts+1, i+1
		}
	}
	if prompts == 0 {
		if _, err := t.runHooks(ctx, s.row.ID+"/session", hookInput{HookEventName: config.HookSessionStart, Source: "startup"}); err != nil {
			return nil, nil, err
		}
		events = s.Events()
	}
	// What the SessionStart hooks and the last turn's Stop hooks said
	// reaches the model with this prompt.
	added = hooksSaid(events[since:])
	text := event.UserMessage{Content: content}.Text()
	// Each prompt sent is new, even with the same words after a refusal
	// or a crash (a prompt not recorded is not resumed, it is sent
	// again): its hooks run for it, under keys no earlier one has.
	base := fmt.Sprintf("%s/prompt-%d-%d", s.row.ID, prompts+1, len(events))
	v, err := t.runHooks(ctx, base, hookInput{HookEventName: config.HookUserPromptSubmit, Prompt: text})
	if err != nil {
		return nil, nil, err
	}
	if v.denied {
		return nil, v.reasons, nil
	}
	return append(added, v.contexts...), nil, nil
}

// hooksSaid is what the SessionStart and Stop hooks recorded in events
// said for the model.
func hooksSaid(events []event.Event) []string {
	var added []string
	for _, e := range events {
		h, ok := e.Payload.(event.HookRan)
		if !ok || h.Event != config.HookSessionStart && h.Event != config.HookStop {
			continue
		}
		switch {
		case h.Verdict == "context":
			added = append(added, h.Context)
		case h.Verdict == "deny" && h.Event == config.HookStop:
			added = append(added, "when your last answer ended, a hook said the work is not done: "+h.Reason)
		}
	}
	return added
}

// stopHooks runs the Stop hooks of a turn that ended (recorded already):
// what they say reaches the model with the next prompt; bridle does not
// call the model again on a hook's word.
func (t *turn) stopHooks(ctx context.Context, stop StopReason) error {
	s := t.s
	if s.parent != nil || len(t.hooksFor(config.HookStop, "")) == 0 {
		return nil
	}
	events := s.Events()
	for i := len(events) - 1; i >= 0; i-- {
		if _, ok := events[i].Payload.(event.UserMessage); ok {
			_, err := t.runHooks(ctx, fmt.Sprintf("%s/%d", s.row.ID, events[i].Seq), hookInput{HookEventName: config.HookStop, StopReason: string(stop)})
			return err
		}
	}
	return nil
}
