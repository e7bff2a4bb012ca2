package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/bridle-dev/bridle/permission"
)

// Remember pins a constraint or a decision so that it survives compaction
// and is repeated to the model every turn.
type Remember struct{}

var (
	rememberDoc    = loadDoc("remember.md")
	rememberSchema = sync.OnceValue(deriveSchema[rememberInput])
)

type rememberInput struct {
	Kind string `json:"kind" jsonschema:"constraint or decision" check:"enum=constraint|decision"`
	Text string `json:"text" jsonschema:"the constraint or decision, in one or two sentences" check:"minLength=1,maxLength=500"`
}

// MaxPinLen bounds one pin: pins are sent with every request.
const MaxPinLen = 500 // also the schema's maxLength (in characters; this is bytes)

func (Remember) Name() string { return "remember" }

func (Remember) Description() string { return rememberDoc.render(nil) }

func (Remember) Schema() json.RawMessage { return rememberSchema().raw }

func (Remember) compiled() *jsonschema.Resolved { return rememberSchema().resolved }

func (Remember) Kind() Kind                { return KindThink }
func (Remember) Effect() permission.Effect { return permission.EffectNone }

func (t Remember) parse(env *Env, input json.RawMessage) (rememberInput, error) {
	in, err := parseInput[rememberInput](env, t.Name(), rememberSchema(), input)
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
