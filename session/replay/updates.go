package replay

import (
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/display"
)

// The updates below are the pieces the Replayer makes its updates of; the
// live turn makes its streamed fragments and progress with them too, so
// both look the same.

// text is a text content block, made safe to show (display.Text): an
// answer, a thought, a command's output may carry escape sequences and
// bidirectional overrides from the repository, which must not act on a
// terminal-based client or reorder what the user reads.
func text(s string) acp.ContentBlock {
	return acp.ContentBlock{Text: &acp.TextContent{Text: display.Text(s)}}
}

// userText is the user's prompt, as shown on replay.
func userText(s string) acp.SessionUpdate {
	return acp.SessionUpdate{UserMessageChunk: &acp.ContentChunk{Content: text(s)}}
}

// AgentText is a fragment of the answer.
func AgentText(s string) acp.SessionUpdate {
	return acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: text(s)}}
}

// AgentThought is a fragment of reasoning.
func AgentThought(s string) acp.SessionUpdate {
	return acp.SessionUpdate{AgentThoughtChunk: &acp.ContentChunk{Content: text(s)}}
}

// CallUpdate is a change to a tool call's card.
func CallUpdate(u acp.ToolCallUpdate) acp.SessionUpdate {
	return acp.SessionUpdate{ToolCallUpdate: &u}
}

// Status is a tool call status to set.
func Status(s acp.ToolCallStatus) *acp.ToolCallStatus { return &s }

// Output is a tool call's content: its output as text, fenced as a code
// block when it is a command's.
func Output(out string, terminal bool) []acp.ToolCallContent {
	if out == "" {
		return nil
	}
	if terminal {
		out = "```\n" + out + "\n```"
	}
	return []acp.ToolCallContent{{Content: &acp.Content{Content: text(out)}}}
}

// CompactionCardID is the id of a compaction's card, from the last event
// its summary covers, so a replay shows the card the live turn did.
func CompactionCardID(through int64) string { return fmt.Sprintf("compact-%d", through) }

// CompactionTitle is the title of a compaction's card.
const CompactionTitle = "Compacting the history"

// rewoundText tells the user what a rewind did.
func rewoundText(v event.Rewound) string {
	var b strings.Builder
	if v.Undoes != 0 {
		fmt.Fprintf(&b, "Undid the rewind to before prompt %d: the agent sees what came after it again.", v.Turn)
	} else {
		fmt.Fprintf(&b, "Rewound to before prompt %d: the agent no longer sees what came after it.", v.Turn)
	}
	if len(v.Restored) == 0 {
		b.WriteString(" No file needed putting back.")
	} else {
		b.WriteString(" Put back:")
		for _, f := range v.Restored {
			what := "restored"
			if f.To == "" {
				what = "removed (the agent had created it)"
			}
			fmt.Fprintf(&b, "\n- %s: %s", f.Path, what)
		}
	}
	if len(v.Kept) > 0 {
		b.WriteString("\nLeft alone:")
		for _, k := range v.Kept {
			b.WriteString("\n- " + k)
		}
	}
	return b.String()
}

// hookCard shows a hook that refused, added context or failed as a
// finished card of kind other; one that allowed in silence is not shown.
func hookCard(v event.HookRan, shown func(string) string) []acp.SessionUpdate {
	var text string
	status := acp.ToolCallStatusCompleted
	switch v.Verdict {
	case "deny":
		text, status = "Refused: "+v.Reason, acp.ToolCallStatusFailed
	case "context":
		text = "Added for the model: " + v.Context
	case "failed":
		text, status = "The hook failed, and did not stop anything: "+v.Reason, acp.ToolCallStatusFailed
	default:
		return nil
	}
	kind := acp.ToolKindOther
	title := display.Label(fmt.Sprintf("%s hook (%s's): %s", v.Event, v.Whose, shown(v.Command)))
	id := "hook-" + strings.NewReplacer("/", "-").Replace(v.Key)
	return []acp.SessionUpdate{{ToolCall: &acp.ToolCall{ToolCallID: id, Title: title, Kind: &kind,
		Status: Status(status), Content: Output(shown(text), false)}}}
}
