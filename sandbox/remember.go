package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Remember pins a constraint or a decision so that it survives compaction
// and is repeated to the model every turn.
type Remember struct{}

type rememberInput struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// MaxPinLen bounds one pin: pins are sent with every request.
const MaxPinLen = 500

func (Remember) Name() string { return "remember" }

func (Remember) Description() string {
	return "Pin a constraint (a rule the user set that must hold for the whole session) or a decision (a choice made that later work must respect). " +
		"Pins are kept verbatim in every request, even after the conversation is summarised. Keep each short and specific."
}

func (Remember) Schema() json.RawMessage {
	return schema(`"kind":{"type":"string","enum":["constraint","decision"],"description":"constraint or decision"},`+
		fmt.Sprintf(`"text":{"type":"string","minLength":1,"maxLength":%d,"description":"the constraint or decision, in one or two sentences"}`, MaxPinLen), "kind", "text")
}

func (Remember) Kind() Kind     { return KindThink }
func (Remember) Effect() Effect { return EffectNone }

func (t Remember) parse(input json.RawMessage) (rememberInput, error) {
	in, err := parseInput[rememberInput](t.Name(), input)
	if err != nil {
		return in, err
	}
	in.Text = strings.TrimSpace(in.Text)
	switch {
	case in.Kind != string(PinConstraint) && in.Kind != string(PinDecision):
		return in, fmt.Errorf("remember: kind must be \"constraint\" or \"decision\", not %q", in.Kind)
	case in.Text == "":
		return in, fmt.Errorf("remember: text is empty")
	case len(in.Text) > MaxPinLen:
		return in, fmt.Errorf("remember: text is %d bytes; keep a pin under %d", len(in.Text), MaxPinLen)
	}
	return in, nil
}

func (t Remember) Preview(env *Env, input json.RawMessage) (Preview, error) {
	in, err := t.parse(input)
	if err != nil {
		return Preview{}, err
	}
	return Preview{Title: "Remember " + in.Kind + ": " + in.Text}, nil
}

func (t Remember) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := t.parse(input)
	if err != nil {
		return Errorf("%v", err)
	}
	text := env.redact(in.Text)
	return Result{Output: fmt.Sprintf("Pinned %s: %s", in.Kind, text), Pin: &Pin{Kind: PinKind(in.Kind), Text: text}}
}
