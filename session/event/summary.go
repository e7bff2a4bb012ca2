package event

import (
	"fmt"
	"strings"
)

// Summary renders one event on one line, as `bridle log` prints it.
func Summary(p Payload) string {
	switch v := p.(type) {
	case SessionStarted:
		return fmt.Sprintf("cwd=%s model=%s mode=%s", v.Cwd, v.Model, v.Mode)
	case UserMessage:
		return Quote(v.Text())
	case AssistantMessage:
		s := Quote(v.Text)
		for _, c := range v.ToolCalls {
			s += fmt.Sprintf(" → %s %s", c.Name, clip(string(c.Input), 60))
		}
		return strings.TrimSpace(s + " [" + v.StopReason + "]")
	case ToolStarted:
		return fmt.Sprintf("%s key=%s", v.Name, v.Key)
	case ToolResult:
		return fmt.Sprintf("%s %s key=%s: %s", v.Name, v.Status, v.Key, Quote(v.Output))
	case ApprovalRequest:
		return fmt.Sprintf("%s %s", v.Tool, Quote(v.Summary))
	case ApprovalGranted:
		return fmt.Sprintf("%s scope=%s %s", v.Tool, v.Scope, v.Pattern)
	case ApprovalDenied:
		return fmt.Sprintf("%s scope=%s %s", v.Tool, v.Scope, v.Pattern)
	case Interrupted:
		return fmt.Sprintf("%s, partial: %s", v.Reason, Quote(v.Text))
	case Compaction:
		return fmt.Sprintf("replaces events through %d: %s", v.Through, Quote(v.Summary))
	case ConstraintPinned:
		return fmt.Sprintf("(%s) %s", v.Source, Quote(v.Text))
	case DecisionRecorded:
		return fmt.Sprintf("(%s) %s", v.Source, Quote(v.Text))
	case ContextAssembled:
		return fmt.Sprintf("used %d of %d (prefix %d, task+pins %d, history %d, tools %d, slack %d) action=%s",
			v.Used(), v.Window, v.FixedPrefix, v.TaskPins, v.History, v.ToolOutputs, v.Slack, v.Action)
	case ModeChanged:
		return v.From + " → " + v.To
	case ModelChanged:
		return v.From + " → " + v.To
	case FileChanged:
		what := "changed"
		if v.Version == "" {
			what = "deleted"
		}
		return fmt.Sprintf("%s %s on disk after the read at turn %d", v.Path, what, v.Turn)
	case SubagentStarted:
		return fmt.Sprintf("child=%s %s", v.ChildID, Quote(v.Prompt))
	case SubagentFinished:
		return fmt.Sprintf("child=%s %s: %s", v.ChildID, v.Status, Quote(v.Answer))
	case TurnFinished:
		return v.StopReason
	case ProviderError:
		return fmt.Sprintf("%s %s: %s", v.Provider, v.ErrKind, v.Message)
	}
	return ""
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
