package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/permission"
)

// Remember pins a constraint or a decision so that it survives compaction
// and is repeated to the model every turn.
type Remember struct{ declared[Remember] }

func (Remember) spec() *toolSpec { return &rememberSpec }

var rememberSpec = newSpec[rememberInput]("remember", KindThink, permission.EffectNone)

type rememberInput struct {
	Kind string `json:"kind" jsonschema:"constraint or decision" check:"enum=constraint|decision"`
	Text string `json:"text" jsonschema:"the constraint or decision, in one or two sentences" check:"minLength=1,maxLength=500"`
}

// MaxPinLen bounds one pin: pins are sent with every request.
const MaxPinLen = 500 // also the schema's maxLength (in characters; this is bytes)

func (t Remember) parse(env *Env, input json.RawMessage) (rememberInput, error) {
	in, err := parseInput[rememberInput](env, t.Name(), rememberSpec.schema(), input)
	if err != nil {
		return in, err
	}
	in.Text = strings.TrimSpace(in.Text)
	switch {
	case in.Text == "":
		return in, fmt.Errorf("remember: text is empty")
	case len(in.Text) > MaxPinLen:
		return in, fmt.Errorf("remember: text is %d bytes; keep a pin under %d", len(in.Text), MaxPinLen)
	}
	return in, nil
}

func (t Remember) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := t.parse(env, input)
	if err != nil {
		return Preview{}, err
	}
	return Preview{Title: "Remember " + in.Kind + ": " + in.Text}, nil
}

func (t Remember) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := t.parse(env, input)
	if err != nil {
		return Errorf("%v", err)
	}
	text := env.redact(in.Text)
	return Result{Output: fmt.Sprintf("Pinned %s: %s", in.Kind, text), Pin: &Pin{Kind: PinKind(in.Kind), Text: text}}
}
