// Package replay turns a session's events into the ACP updates the
// editor saw when they happened: the live turn sends them for every event
// it commits (all but the streamed fragments), and session/load's replay
// sends them again for the stored log, so a replay shows what the user
// saw. A call's card is previewed through its tool from the input alone;
// pins, images, rewinds and compactions are shown as they were; paths
// the editor may not be given are left out; what comes from the log as
// stored is redacted as it is shown. The session builds a Replayer with
// what it needs (Config).
package replay

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/display"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/tools"
)

// InterruptedMark is shown after the partial text of an interrupted
// response, live and on replay, so it never reads as a finished thought.
const InterruptedMark = "\n\n[interrupted]"

// Config is what a Replayer shows events with, given by the session.
type Config struct {
	// SessionID makes the ids the editor knows calls by.
	SessionID string
	// Tools are the session's tools by name: a call's card is previewed
	// through its tool, and a command's output is fenced.
	Tools map[string]tools.Tool
	// Env previews the cards of a replay, and locates the paths shown.
	Env *tools.Env
	// CallEnv, when set, is the Env a call's card is previewed with: the
	// live turn's, shared with the call's Preview, Plan and Run. A replay
	// previews with Env.
	CallEnv func(key string) *tools.Env
	// Image loads a prompt's stored image, to show it again.
	Image func(uri string) ([]byte, error)
	// Redactor redacts the titles of the cards, which the tools' previews
	// make from the input the call runs with.
	Redactor *redact.Redactor
	// Logged says the events come from the log as it is stored, which may
	// be older than the rule that everything recorded is redacted: what
	// an update shows of an event is redacted as it is made (shown). The
	// live show's events were redacted when they were recorded, and are
	// not again (see session/redact.go).
	Logged bool
}

// Replayer turns events into the updates the editor saw when they
// happened. The live turn uses it too, for every update that is not a
// streamed fragment, so a replay shows what the user saw. It is used by
// one goroutine at a time.
type Replayer struct {
	cfg Config
	// loc locates the paths of the cards, made on first use: a Replayer
	// lives for one replay, or for the events of one commit.
	loc *confine.Locator
}

// New is a Replayer that shows events with c.
func New(c Config) *Replayer { return &Replayer{cfg: c} }

// Updates are an event's updates. ctx bounds the previews of its calls'
// cards (an edit's may ask the editor for the file).
func (r *Replayer) Updates(ctx context.Context, e event.Event) []acp.SessionUpdate {
	if !e.Kind().Facts().Shown {
		return nil
	}
	switch v := e.Payload.(type) {
	case event.UserMessage:
		shown := v.Text()
		if v.Command != nil {
			// The user typed the command; the log keeps its expansion.
			shown = v.Command.Typed()
		}
		out := []acp.SessionUpdate{userText(shown)}
		for _, c := range v.Content {
			if c.Type != "image" || c.URI == "" || r.cfg.Image == nil {
				continue
			}
			// The prompt's text names the image; the image follows, when
			// it is still stored.
			if data, err := r.cfg.Image(c.URI); err == nil {
				out = append(out, acp.SessionUpdate{UserMessageChunk: &acp.ContentChunk{Content: acp.ContentBlock{
					Image: &acp.ImageContent{Data: base64.StdEncoding.EncodeToString(data), MimeType: c.MimeType}}}})
			}
		}
		if len(v.Redacted) > 0 {
			out = append(out, AgentText(redactedNote(v.Redacted)))
		}
		return out
	case event.AssistantMessage:
		var out []acp.SessionUpdate
		if v.Thinking != "" {
			out = append(out, AgentThought(r.shown(v.Thinking)))
		}
		if v.Text != "" {
			out = append(out, AgentText(r.shown(v.Text)))
		}
		for i, c := range v.ToolCalls {
			call := r.view(ctx, event.NewCallKey(r.cfg.SessionID, e.Seq, i), c.Name, c.Input)
			out = append(out, acp.SessionUpdate{ToolCall: &call})
		}
		return out
	case event.ToolStarted:
		return []acp.SessionUpdate{CallUpdate(acp.ToolCallUpdate{ToolCallID: event.ToolCallID(v.Key), Status: Status(acp.ToolCallStatusInProgress)})}
	case event.ToolResult:
		up := acp.ToolCallUpdate{ToolCallID: event.ToolCallID(v.Key), Status: Status(acp.ToolCallStatusCompleted)}
		switch {
		case v.IsError:
			up.Status = Status(acp.ToolCallStatusFailed)
		case v.Background != "":
			// The command runs on: its card stays live until its
			// command_finished.
			up.Status = Status(acp.ToolCallStatusInProgress)
		}
		t, ok := r.cfg.Tools[v.Name]
		out := v.Output
		if v.IsError || v.Status != "completed" {
			// A tool's own output is redacted by the tool; an error's
			// text may quote the call's input (session's turn.result).
			out = r.shown(out)
		}
		up.Content = Output(out, ok && t.Kind() == tools.KindExecute)
		if v.Diff != nil {
			if d := r.Diff(v.Diff.Path, v.Diff.OldText, v.Diff.NewText); d != nil {
				up.Content = append(up.Content, acp.ToolCallContent{Diff: d})
			}
		}
		for _, l := range v.Locations {
			if p, ok := r.locate(l); ok {
				up.Locations = append(up.Locations, acp.ToolCallLocation{Path: p})
			}
		}
		return []acp.SessionUpdate{CallUpdate(up)}
	case event.CommandFinished:
		// The card of the call that started it, done.
		up := acp.ToolCallUpdate{ToolCallID: event.ToolCallID(v.Key), Status: Status(acp.ToolCallStatusCompleted)}
		if v.Status != "completed" && v.Status != "stopped" {
			up.Status = Status(acp.ToolCallStatusFailed)
		}
		text := v.Summary
		if v.Tail != "" {
			text = v.Tail + "\n" + text
		}
		up.Content = Output(r.shown(text), true)
		return []acp.SessionUpdate{CallUpdate(up)}
	case event.Interrupted:
		var out []acp.SessionUpdate
		if v.Thinking != "" {
			out = append(out, AgentThought(r.shown(v.Thinking)))
		}
		return append(out, AgentText(r.shown(v.Text)+InterruptedMark))
	case event.ContextAssembled:
		return []acp.SessionUpdate{{UsageUpdate: &acp.UsageUpdate{Used: uint64(v.Used()), Size: uint64(v.Window)}}}
	case event.ConstraintPinned:
		return pinUpdates("/constraint", v.Source, r.pin(v.Source, v.Text), "Pinned constraint: ", v.Redacted)
	case event.DecisionRecorded:
		return pinUpdates("/decision", v.Source, r.pin(v.Source, v.Text), "Recorded decision: ", v.Redacted)
	case event.ModeChanged:
		return []acp.SessionUpdate{{CurrentModeUpdate: &acp.CurrentModeUpdate{CurrentModeID: v.To}}}
	case event.Compaction:
		// The card the compaction showed while it ran, done.
		kind, text := acp.ToolKindThink, fmt.Sprintf("Summarized the history through event %d.", v.Through)
		if v.WindowBefore > 0 {
			text += fmt.Sprintf(" The window was at %d tokens when it was called for.", v.WindowBefore)
		}
		return []acp.SessionUpdate{{ToolCall: &acp.ToolCall{ToolCallID: CompactionCardID(v.Through), Title: CompactionTitle, Kind: &kind,
			Status: Status(acp.ToolCallStatusCompleted), Content: Output(text, false)}}}
	case event.Rewound:
		return []acp.SessionUpdate{AgentText(rewoundText(v))}
	case event.HookRan:
		return hookCard(v, r.shown)
	case event.PlanUpdated:
		plan := &acp.Plan{Entries: make([]acp.PlanEntry, len(v.Entries))}
		for i, e := range v.Entries {
			plan.Entries[i] = acp.PlanEntry{Content: display.Label(r.shown(e.Content)), Priority: acp.PlanEntryPriorityMedium, Status: acp.PlanEntryStatus(e.Status)}
		}
		return []acp.SessionUpdate{{Plan: plan}}
	case event.ProviderError:
		if v.Final {
			// Marked, so that a client that reports errors on its own
			// (`bridle run` on stderr) does not show it twice.
			u := AgentText("\n\n[error: " + r.shown(v.Message) + "]")
			u.AgentMessageChunk.Meta = map[string]any{"bridle": map[string]any{"error": true}}
			return []acp.SessionUpdate{u}
		}
	}
	return nil
}

// shown is text as an update shows it: redacted when it comes from the
// log as stored (logged).
func (r *Replayer) shown(text string) string {
	if !r.cfg.Logged {
		return text
	}
	return r.cfg.Redactor.Redact(text)
}

// pin is a pin's text as shown: the user's was redacted as a prompt is,
// by gentler rules, and is left as it is.
func (r *Replayer) pin(source, text string) string {
	if source == "user" {
		return text
	}
	return r.shown(text)
}

// pinUpdates shows a pin; one the user typed also shows the command, as a
// prompt would be.
func pinUpdates(cmd, source, text, ack string, redacted []string) []acp.SessionUpdate {
	var out []acp.SessionUpdate
	if source == "user" {
		out = append(out, userText(cmd+" "+text))
	}
	if len(redacted) > 0 {
		out = append(out, AgentText(redactedNote(redacted)))
	}
	return append(out, AgentText(ack+text))
}

// redactedNote tells the user that secrets were taken out of their prompt
// (kinds as UserMessage.Redacted holds them), as the first words of the
// agent's answer, live and on replay.
func redactedNote(kinds []string) string {
	var names []string
	for _, k := range kinds {
		if !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	if len(kinds) == 1 {
		return "[bridle: 1 secret in your prompt was redacted before it was stored or sent to the model: " + names[0] + "]\n\n"
	}
	return fmt.Sprintf("[bridle: %d secrets in your prompt were redacted before they were stored or sent to the model: %s]\n\n", len(kinds), strings.Join(names, ", "))
}

// view describes a requested call from its input alone, so the live card
// and the replayed one agree.
func (r *Replayer) view(ctx context.Context, key, name string, input json.RawMessage) acp.ToolCall {
	v := r.pending(key, name, input)
	t, ok := r.cfg.Tools[name]
	if !ok {
		return v
	}
	kind := acp.ToolKind(t.Kind())
	v.Kind = &kind
	env := r.cfg.Env
	if r.cfg.CallEnv != nil {
		// Not held back by a command of another session: the call waits
		// for it when it runs, and says so on this card.
		env = r.cfg.CallEnv(key).WithoutWaiting()
	}
	if p, err := t.Preview(ctx, env, input); err == nil {
		r.fill(&v, p)
	}
	return v
}

// ViewOf is view for a call whose preview the caller has already made.
func (r *Replayer) ViewOf(key, name string, input json.RawMessage, p tools.Preview) acp.ToolCall {
	v := r.pending(key, name, input)
	if t, ok := r.cfg.Tools[name]; ok {
		kind := acp.ToolKind(t.Kind())
		v.Kind = &kind
		r.fill(&v, p)
	}
	return v
}

// pending is the card of a call not yet previewed, its input as its
// assistant message recorded it. The tool's name is the model's word (it
// may name no tool): shown as a label.
func (r *Replayer) pending(key, name string, input json.RawMessage) acp.ToolCall {
	kind := acp.ToolKind(tools.KindOther)
	if r.cfg.Logged {
		input, _ = r.cfg.Redactor.RedactJSON(input)
	}
	return acp.ToolCall{ToolCallID: event.ToolCallID(key), Title: display.Label(name), Kind: &kind, Status: Status(acp.ToolCallStatusPending), RawInput: input}
}

// fill completes a card from the call's preview; the title says what the
// input says (a command line), redacted.
func (r *Replayer) fill(v *acp.ToolCall, p tools.Preview) {
	if t := display.Label(r.cfg.Redactor.Redact(p.Title)); t != "" {
		v.Title = t
	}
	for _, l := range p.Locations {
		path, ok := r.locate(l.Path)
		if !ok {
			continue
		}
		loc := acp.ToolCallLocation{Path: path}
		if l.Line > 0 {
			line := uint64(l.Line)
			loc.Line = &line
		}
		v.Locations = append(v.Locations, loc)
	}
}

// locate makes a tool's path absolute, as ACP wants every path to be,
// and says whether the editor may be given it at all: a path outside the
// workspace or hidden (which the tool refuses) is not shown, since an
// editor that follows a location would open it itself. The card's title
// may still name what the model asked for.
func (r *Replayer) locate(p string) (string, bool) {
	if p == "" || r.cfg.Env.Root == nil {
		return p, p != ""
	}
	if r.loc == nil {
		r.loc = r.cfg.Env.Root.Locator()
	}
	return r.loc.Locate(p)
}

// Diff is an edit's diff for the editor; nil when its file may not be
// shown (locate).
func (r *Replayer) Diff(path string, oldText *string, newText string) *acp.Diff {
	p, ok := r.locate(path)
	if !ok {
		return nil
	}
	return &acp.Diff{Path: p, OldText: oldText, NewText: newText}
}
