package session

import (
	"errors"
	"fmt"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
)

// ErrPromptTooLarge is wrapped by the refusal of a prompt the session's
// model can never be sent: it does not fit the context window next to
// what every request carries. Nothing of it is recorded. It wraps
// ErrInvalid (the prompt is the caller's input: JSON-RPC -32602).
var ErrPromptTooLarge = fmt.Errorf("%w: \"prompt\" is too large for the model's context window", ErrInvalid)

// checkSize refuses a prompt that could never be sent, before anything of
// it is appended: once in the log, it would be in every later request (a
// first request and pins always are; a later prompt is in the turns kept
// verbatim), and every prompt after it would fail the same way. A prompt
// far too large to count is refused from its size alone.
// specFor is the model a prompt is for: the session's, or the one the
// turn will pin.
func (t *turn) specFor() string {
	info := t.s.Info()
	if info.Model == "" && t.s.m.cfg.DefaultModel != nil {
		return t.s.m.cfg.DefaultModel(info.Cwd)
	}
	return info.Model
}

func (t *turn) checkSize(content []event.Content) error {
	s := t.s
	var p event.Payload = event.UserMessage{Content: content}
	if pin, ok := command(content); ok && s.parent == nil {
		p = pin
	}
	info := s.Info()
	spec := t.specFor()
	err := s.m.window(info.Cwd).CheckPrompt(spec, p, func() contextwin.Input {
		t.reg = s.registry()
		return t.input()
	})
	var pe *contextwin.PromptTooBigError
	if errors.As(err, &pe) {
		s.m.log.Info("prompt refused: too large for the context window", "session", s.row.ID, "bytes", pe.Bytes, "tokens", pe.Tokens, "room", pe.Room)
		return fmt.Errorf("%w: %s", ErrPromptTooLarge, pe.Detail())
	}
	return nil
}
