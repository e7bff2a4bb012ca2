package event

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Summary renders one event on one line, as `bridle log` prints it.
// Each payload type renders itself (Payload.Line), so a new kind
// cannot be added without its line.
func Summary(p Payload) string { return p.Line() }

func (v SessionStarted) Line() string {
	return fmt.Sprintf("cwd=%s model=%s mode=%s", v.Cwd, v.Model, v.Mode)
}

func (v UserMessage) Line() string {
	if c := v.Command; c != nil {
		return fmt.Sprintf("%s (the %s's command %s) → %s", Quote(c.Typed()), c.Whose, c.File, Quote(v.Text()))
	}
	return Quote(v.Text())
}

func (v AssistantMessage) Line() string {
	s := Quote(v.Text)
	for _, c := range v.ToolCalls {
		s += fmt.Sprintf(" → %s %s", c.Name, clip(string(c.Input), 60))
	}
	return strings.TrimSpace(s + " [" + v.StopReason + "]")
}

func (v ToolStarted) Line() string {
	return fmt.Sprintf("%s key=%s", v.Name, v.Key)
}

func (v ToolResult) Line() string {
	line := fmt.Sprintf("%s %s key=%s: %s", v.Name, v.Status, v.Key, Quote(v.Output))
	if len(v.Changed) > 0 {
		// What a command did to the workspace, as a rewind would undo it.
		names := make([]string, 0, 3)
		for _, c := range v.Changed[:min(3, len(v.Changed))] {
			names = append(names, filepath.Base(c.Path))
		}
		more := ""
		if len(v.Changed) > 3 {
			more = ", …"
		}
		line += fmt.Sprintf(" changed %d file(s): %s%s", len(v.Changed), strings.Join(names, ", "), more)
	}
	return line
}

func (v ApprovalRequest) Line() string {
	return fmt.Sprintf("%s %s", v.Tool, Quote(v.Summary))
}

func (v ApprovalGranted) Line() string {
	return fmt.Sprintf("%s scope=%s %s", v.Tool, v.Scope, v.Pattern)
}

func (v ApprovalDenied) Line() string {
	return fmt.Sprintf("%s scope=%s %s", v.Tool, v.Scope, v.Pattern)
}

func (v Interrupted) Line() string {
	return fmt.Sprintf("%s, partial: %s", v.Reason, Quote(v.Text))
}

func (v Compaction) Line() string {
	return fmt.Sprintf("replaces events through %d: %s", v.Through, Quote(v.Summary))
}

func (v ConstraintPinned) Line() string {
	return fmt.Sprintf("(%s) %s", v.Source, Quote(v.Text))
}

func (v DecisionRecorded) Line() string {
	return fmt.Sprintf("(%s) %s", v.Source, Quote(v.Text))
}

func (v ContextAssembled) Line() string {
	return fmt.Sprintf("used %d of %d (prefix %d, task+pins %d, history %d, tools %d, slack %d) action=%s",
		v.Used(), v.Window, v.FixedPrefix, v.TaskPins, v.History, v.ToolOutputs, v.Slack, v.Action)
}

func (v ModeChanged) Line() string {
	return v.From + " → " + v.To
}

func (v ModelChanged) Line() string {
	return v.From + " → " + v.To
}

func (v FileChanged) Line() string {
	what := "changed"
	if v.Version == "" {
		what = "deleted"
	}
	return fmt.Sprintf("%s %s on disk after the read at turn %d", v.Path, what, v.Turn)
}

func (v SubagentStarted) Line() string {
	return fmt.Sprintf("child=%s %s", v.ChildID, Quote(v.Prompt))
}

func (v SubagentFinished) Line() string {
	return fmt.Sprintf("child=%s %s: %s", v.ChildID, v.Status, Quote(v.Answer))
}

func (v TurnFinished) Line() string {
	return v.StopReason
}

func (v ProviderError) Line() string {
	return fmt.Sprintf("%s %s: %s", v.Provider, v.ErrKind, v.Message)
}

// Quote quotes s clipped to 80 characters, its spaces collapsed.
func Quote(s string) string { return fmt.Sprintf("%q", clip(s, 80)) }

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (v PlanUpdated) Line() string {
	var parts []string
	for _, e := range v.Entries {
		parts = append(parts, e.Status+": "+e.Content)
	}
	return fmt.Sprintf("%d steps: %s", len(v.Entries), Quote(strings.Join(parts, "; ")))
}

func (v RewindStarted) Line() string {
	return fmt.Sprintf("to before prompt %d (seq %d): %d files to put back", v.Turn, v.From, len(v.Files))
}

func (v Rewound) Line() string {
	var paths []string
	for _, f := range v.Restored {
		paths = append(paths, f.Path)
	}
	line := fmt.Sprintf("to before prompt %d (seq %d): put back %s", v.Turn, v.From, Quote(strings.Join(paths, ", ")))
	if len(v.Kept) > 0 {
		line += fmt.Sprintf("; left alone %s", Quote(strings.Join(v.Kept, ", ")))
	}
	return line
}

func (v HookRan) Line() string {
	line := fmt.Sprintf("%s (%s's) %s → %s in %d ms", v.Event, v.Whose, Quote(v.Command), v.Verdict, v.DurationMS)
	if v.Tool != "" {
		line = fmt.Sprintf("%s %s key=%s", line, v.Tool, v.Key)
	}
	if v.Reason != "" {
		line += ": " + Quote(v.Reason)
	}
	if v.Context != "" {
		line += " context " + Quote(v.Context)
	}
	return line
}

func (v CommandFinished) Line() string {
	line := fmt.Sprintf("%s %s key=%s: %s", v.ID, v.Status, v.Key, Quote(v.Summary))
	if len(v.Changed) > 0 {
		line += fmt.Sprintf(" changed %d file(s)", len(v.Changed))
	}
	return line
}
