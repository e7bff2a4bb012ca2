package session

import (
	"context"
	"strings"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/session/event"
)

// Commands lists the slash commands every session offers.
func (m *Manager) Commands() []acp.AvailableCommand {
	return []acp.AvailableCommand{
		{Name: "constraint", Description: "Pin a rule the agent must keep for the whole session", Input: &acp.AvailableCommandInput{Hint: "a rule, e.g. never touch the migrations folder"}},
		{Name: "decision", Description: "Record a decision later turns must respect", Input: &acp.AvailableCommandInput{Hint: "a decision, e.g. use sqlite, not postgres"}},
		{Name: "fork", Description: "Start a new session from this one's history before a prompt; files are not touched", Input: &acp.AvailableCommandInput{Hint: "the number of the prompt, counted from 1"}},
		{Name: "rewind", Description: "Go back to before a prompt: the files the agent changed since, and the conversation", Input: &acp.AvailableCommandInput{Hint: "the number of the prompt, counted from 1"}},
	}
}

// slashCommand splits a prompt that is one line of text into a command's
// name ("/rewind") and its argument, trimmed; ok is false for any other
// prompt.
func slashCommand(content []event.Content) (name, arg string, ok bool) {
	if len(content) != 1 || content[0].Type != "text" {
		return "", "", false
	}
	name, arg, _ = strings.Cut(strings.TrimSpace(content[0].Text), " ")
	return name, strings.TrimSpace(arg), strings.HasPrefix(name, "/")
}

// command recognises "/constraint TEXT" and "/decision TEXT" prompts and
// returns the event that pins them.
func command(content []event.Content) (event.Payload, bool) {
	name, arg, ok := slashCommand(content)
	if !ok || arg == "" {
		return nil, false
	}
	switch name {
	case "/constraint":
		return event.ConstraintPinned{Text: arg, Source: "user"}, true
	case "/decision":
		return event.DecisionRecorded{Text: arg, Source: "user"}, true
	}
	return nil, false
}

// pin records a command's event and acknowledges it, without a model call:
// a pin is the user's word, not a question.
func (t *turn) pin(ctx context.Context, p event.Payload) (StopReason, error) {
	if _, err := t.s.commit(ctx, typed, p); err != nil {
		return "", err
	}
	return t.finish(ctx, StopEndTurn, nil)
}

// withRedacted records on a pin the user typed what was redacted in it.
func withRedacted(p event.Payload, redacted []string) event.Payload {
	switch v := p.(type) {
	case event.ConstraintPinned:
		v.Redacted = redacted
		return v
	case event.DecisionRecorded:
		v.Redacted = redacted
		return v
	}
	return p
}
