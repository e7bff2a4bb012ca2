package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bridle-dev/bridle/permission"
)

// CommandStop stops a background command and everything it started.
type CommandStop struct{ declared[CommandStop] }

func (CommandStop) spec() *toolSpec { return &commandStopSpec }

var commandStopSpec = newSpec[commandStopInput]("command_stop", KindExecute, permission.EffectNone)

type commandStopInput struct {
	ID string `json:"id" jsonschema:"the command's id, as run_command gave it (bg1)" check:"minLength=1,maxLength=16"`
}

func (t CommandStop) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[commandStopInput](env, t.Name(), commandStopSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	return Preview{Title: "Stop " + in.ID}, nil
}

func (t CommandStop) Run(_ context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[commandStopInput](env, t.Name(), commandStopSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	if env.Background == nil {
		return Errorf("command_stop: this session runs no command in the background")
	}
	end, err := env.Background.Stop(in.ID, "by command_stop")
	if err != nil {
		return Errorf("command_stop: %v", err)
	}
	if end.ID == "" {
		return Errorf("command_stop: %s was told to stop and has not ended within %v", in.ID, stopWait)
	}
	return Result{Output: fmt.Sprintf("[%s has ended: %s]\n", end.ID, end.Summary), Redacted: true}
}
