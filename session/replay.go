package session

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/sandbox"
	"github.com/bridle-dev/bridle/session/event"
)

// InterruptedMark is shown after the partial text of an interrupted
// response, live and on replay, so it never reads as a finished thought.
const InterruptedMark = "\n\n[interrupted]"

// callKey is the idempotency key of call index i of the assistant event at
// seq: the same on the first run and on every replay.
func callKey(sessionID string, seq int64, i int) string {
	return fmt.Sprintf("%s/%d/%d", sessionID, seq, i)
}

// toolCallID is the id the editor knows a call by, derived from its key.
func toolCallID(key string) string {
	parts := strings.Split(key, "/")
	if len(parts) < 3 {
		return key
	}
	return "call-" + parts[len(parts)-2] + "-" + parts[len(parts)-1]
}

// replayer turns events into the updates the editor saw when they
// happened. The live turn uses it too, for every update that is not a
// streamed fragment, so a replay shows what the user saw.
type replayer struct {
	sessionID string
	tools     map[string]sandbox.Tool
	env       *sandbox.Env
}

func (s *Session) replayer() *replayer {
	tools := map[string]sandbox.Tool{}
	for _, t := range s.tools() {
		tools[t.Name()] = t
	}
	return &replayer{sessionID: s.row.ID, tools: tools, env: s.env("")}
}

func (r *replayer) updates(e event.Event) []Update {
	switch v := e.Payload.(type) {
	case event.UserMessage:
		out := []Update{{Kind: UpdateUserText, Text: v.Text()}}
		if len(v.Redacted) > 0 {
			out = append(out, Update{Kind: UpdateAgentText, Text: RedactedNote(v.Redacted)})
		}
		return out
	case event.AssistantMessage:
		var out []Update
		if v.Thinking != "" {
			out = append(out, Update{Kind: UpdateAgentThought, Text: v.Thinking})
		}
		if v.Text != "" {
			out = append(out, Update{Kind: UpdateAgentText, Text: v.Text})
		}
		for i, c := range v.ToolCalls {
			view := r.view(callKey(r.sessionID, e.Seq, i), c.Name, c.Input)
			out = append(out, Update{Kind: UpdateToolCall, Tool: &view})
		}
		return out
	case event.ToolStarted:
		return []Update{{Kind: UpdateToolCallDone, Tool: &ToolView{ID: toolCallID(v.Key), Status: "in_progress"}}}
	case event.ToolResult:
		view := ToolView{ID: toolCallID(v.Key), Status: "completed", Output: v.Output}
		if v.IsError {
			view.Status = "failed"
		}
		if t, ok := r.tools[v.Name]; ok && t.Kind() == sandbox.KindExecute {
			view.Terminal = true
		}
		if v.Diff != nil {
			view.Diff = &Diff{Path: r.abs(v.Diff.Path), OldText: v.Diff.OldText, NewText: v.Diff.NewText}
		}
		for _, l := range v.Locations {
			view.Locations = append(view.Locations, Location{Path: r.abs(l)})
		}
		return []Update{{Kind: UpdateToolCallDone, Tool: &view}}
	case event.Interrupted:
		var out []Update
		if v.Thinking != "" {
			out = append(out, Update{Kind: UpdateAgentThought, Text: v.Thinking})
		}
		return append(out, Update{Kind: UpdateAgentText, Text: v.Text + InterruptedMark})
	case event.ContextAssembled:
		return []Update{{Kind: UpdateUsage, Usage: &Usage{Used: v.Used(), Size: v.Window}}}
	case event.ConstraintPinned:
		return pinUpdates("/constraint", v.Source, v.Text, "Pinned constraint: ", v.Redacted)
	case event.DecisionRecorded:
		return pinUpdates("/decision", v.Source, v.Text, "Recorded decision: ", v.Redacted)
	case event.ModeChanged:
		return []Update{{Kind: UpdateMode, Mode: v.To}}
	case event.ProviderError:
		if v.Final {
			return []Update{{Kind: UpdateAgentText, Text: "\n\n[error: " + v.Message + "]"}}
		}
	}
	return nil
}

// pinUpdates shows a pin; one the user typed also shows the command, as a
// prompt would be.
func pinUpdates(cmd, source, text, ack string, redacted []string) []Update {
	var out []Update
	if source == "user" {
		out = append(out, Update{Kind: UpdateUserText, Text: cmd + " " + text})
	}
	if len(redacted) > 0 {
		out = append(out, Update{Kind: UpdateAgentText, Text: RedactedNote(redacted)})
	}
	return append(out, Update{Kind: UpdateAgentText, Text: ack + text})
}

// RedactedNote tells the user that secrets were taken out of their prompt
// (kinds as UserMessage.Redacted holds them), as the first words of the
// agent's answer, live and on replay.
func RedactedNote(kinds []string) string {
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

// view describes a requested call from its input alone, so the live view
// and the replayed one agree.
func (r *replayer) view(key, name string, input json.RawMessage) ToolView {
	v := ToolView{ID: toolCallID(key), Title: name, Kind: string(sandbox.KindOther), Status: "pending", Input: input}
	t, ok := r.tools[name]
	if !ok {
		return v
	}
	v.Kind = string(t.Kind())
	if p, err := t.Preview(r.env, input); err == nil {
		r.fill(&v, p)
	}
	return v
}

// viewOf is view for a call whose preview the caller has already made.
func (r *replayer) viewOf(key, name string, input json.RawMessage, p sandbox.Preview) ToolView {
	v := ToolView{ID: toolCallID(key), Title: name, Kind: string(sandbox.KindOther), Status: "pending", Input: input}
	if t, ok := r.tools[name]; ok {
		v.Kind = string(t.Kind())
		r.fill(&v, p)
	}
	return v
}

func (r *replayer) fill(v *ToolView, p sandbox.Preview) {
	if p.Title != "" {
		v.Title = p.Title
	}
	for _, l := range p.Locations {
		v.Locations = append(v.Locations, Location{Path: r.abs(l.Path), Line: l.Line})
	}
}

// abs makes a tool path absolute: ACP wants every path to be.
func (r *replayer) abs(p string) string {
	if p == "" || filepath.IsAbs(p) || r.env.Root == nil {
		return p
	}
	return filepath.Join(r.env.Root.Dir(), p)
}
