package session

import (
	"context"
	"strconv"
	"strings"
	"unicode"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
)

// Commands lists bridle's own slash commands, which every session offers
// (Session.Commands adds the prompt commands).
func (m *Manager) Commands() []acp.AvailableCommand {
	return []acp.AvailableCommand{
		{Name: "constraint", Description: "Pin a rule the agent must keep for the whole session", Input: &acp.AvailableCommandInput{Hint: "a rule, e.g. never touch the migrations folder"}},
		{Name: "decision", Description: "Record a decision later turns must respect", Input: &acp.AvailableCommandInput{Hint: "a decision, e.g. use sqlite, not postgres"}},
		{Name: "fork", Description: "Start a new session from this one's history before a prompt; files are not touched", Input: &acp.AvailableCommandInput{Hint: "the number of the prompt, counted from 1"}},
		{Name: "rewind", Description: "Go back to before a prompt: the files the agent changed since, and the conversation", Input: &acp.AvailableCommandInput{Hint: "the number of the prompt, counted from 1"}},
		{Name: "skills", Description: "List the skills and prompt commands of this session, whose each is, and those not used"},
	}
}

// Modes lists the modes every session offers, in the order an editor
// should show them; SetMode takes their ids.
func (m *Manager) Modes() []acp.SessionMode {
	var out []acp.SessionMode
	for _, md := range permission.Modes() {
		mode := acp.SessionMode{ID: string(md.ID), Name: md.Name}
		if md.Description != "" {
			mode.Description = &md.Description
		}
		out = append(out, mode)
	}
	return out
}

// slashCommand splits a prompt that is one text block into a command's
// name ("/rewind"), up to the first white space, and its argument,
// trimmed; ok is false for any other prompt.
func slashCommand(content []event.Content) (name, arg string, ok bool) {
	if len(content) != 1 || content[0].Type != "text" {
		return "", "", false
	}
	text := strings.TrimSpace(content[0].Text)
	name, arg = text, ""
	if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
		name, arg = text[:i], strings.TrimSpace(text[i:])
	}
	return name, arg, strings.HasPrefix(name, "/")
}

// promptNumber reads the argument of "/rewind N" and "/fork N": the
// number of a prompt as /rewind lists it, decimal digits from 1 with no
// sign and no leading zero. Anything else ("+1", "01", "1.0", "0x1",
// "1e0", "١") is refused rather than read as some number: a rewind the
// user did not mean puts files back.
func promptNumber(arg string) (int, bool) {
	if arg == "" || arg[0] == '0' || strings.TrimLeft(arg, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(arg)
	return n, err == nil
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
