package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/display"
)

// progress is a running child's Client. The editor sees the subagent as
// one tool call, the parent's task call: the child's tool calls become
// lines of that call's content, updated as they go, and the child's
// questions are put to the user through the parent's
// session/request_permission, on the task call, naming the subagent.
// Progress is not replayed by session/load (like streamed text): the
// call's result, the child's answer, replaces it in the end either way.
type progress struct {
	parent  Parent
	callID  string // the task call's id in the editor
	desc    string
	childID string
	input   json.RawMessage

	mu    sync.Mutex
	steps []step
	text  strings.Builder // the child's message being streamed
	said  string          // the last line of its latest message
}

type step struct{ id, title, status string }

// maxSteps bounds the lines shown; earlier ones are counted.
const maxSteps = 12

func newProgress(parent Parent, key string, input json.RawMessage, desc, childID string) *progress {
	// The description is the model's: shown in titles, as a label.
	return &progress{parent: parent, callID: event.ToolCallID(key), desc: display.Label(desc), childID: childID, input: input}
}

// Update implements Client.
func (p *progress) Update(ctx context.Context, _ string, u acp.SessionUpdate) error {
	p.mu.Lock()
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			p.text.WriteString(t.Text)
		}
		p.mu.Unlock()
		return nil // shown with the next step
	case u.ToolCall != nil:
		p.said = lastLine(p.text.String())
		p.text.Reset()
		p.steps = append(p.steps, step{id: u.ToolCall.ToolCallID, title: u.ToolCall.Title, status: "pending"})
	case u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil:
		if !p.set(u.ToolCallUpdate.ToolCallID, string(*u.ToolCallUpdate.Status)) {
			p.mu.Unlock()
			return nil
		}
	default:
		p.mu.Unlock()
		return nil
	}
	card := p.card()
	p.mu.Unlock()
	p.parent.Show(ctx, acp.SessionUpdate{ToolCallUpdate: &card})
	return nil
}

// RequestPermission implements Client: the question goes to the editor
// on the task call, titled with the subagent's description.
func (p *progress) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	p.mu.Lock()
	p.set(req.ToolCall.ToolCallID, "waiting for your approval")
	p.mu.Unlock()
	title := ""
	if req.ToolCall.Title != nil {
		title = *req.ToolCall.Title
	}
	title = fmt.Sprintf("Subagent %q: %s", p.desc, title)
	req.SessionID = p.parent.ID()
	req.ToolCall.ToolCallID = p.callID
	req.ToolCall.Title = &title
	req.ToolCall.Status = nil
	resp, err := p.parent.Ask(ctx, req)
	// The question updated the task call's card; put the card back.
	p.mu.Lock()
	card := p.card()
	p.mu.Unlock()
	p.parent.Show(ctx, acp.SessionUpdate{ToolCallUpdate: &card})
	return resp, err
}

// set changes a step's status; false if nothing changed.
func (p *progress) set(id, status string) bool {
	for i := range p.steps {
		if p.steps[i].id == id && status != "" && p.steps[i].status != status {
			p.steps[i].status = status
			return true
		}
	}
	return false
}

// card renders the progress as the task call's content. Called with mu.
func (p *progress) card() acp.ToolCallUpdate {
	var b strings.Builder
	fmt.Fprintf(&b, "Subagent %q at work (session %s)\n", p.desc, p.childID)
	steps := p.steps
	if n := len(steps) - maxSteps; n > 0 {
		fmt.Fprintf(&b, "(%d earlier steps)\n", n)
		steps = steps[n:]
	}
	for _, s := range steps {
		mark := "…"
		switch s.status {
		case "completed":
			mark = "✓"
		case "failed":
			mark = "✗"
		}
		fmt.Fprintf(&b, "%s %s", mark, s.title)
		if mark == "…" {
			fmt.Fprintf(&b, " (%s)", strings.ReplaceAll(s.status, "_", " "))
		}
		b.WriteByte('\n')
	}
	if p.said != "" {
		fmt.Fprintf(&b, "> %s\n", p.said)
	}
	title, kind, status := "Subagent: "+p.desc, acp.ToolKindThink, acp.ToolCallStatusInProgress
	var content []acp.ToolCallContent
	if out := strings.TrimSpace(b.String()); out != "" {
		content = []acp.ToolCallContent{{Content: &acp.Content{Content: acp.ContentBlock{Text: &acp.TextContent{Text: out}}}}}
	}
	return acp.ToolCallUpdate{ToolCallID: p.callID, Title: &title, Kind: &kind, Status: &status, RawInput: p.input, Content: content}
}

// lastLine returns the last non-empty line of s, clipped.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if r := []rune(l); len(r) > 160 {
		l = string(r[:159]) + "…"
	}
	return l
}
