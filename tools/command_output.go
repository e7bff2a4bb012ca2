package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bridle-dev/bridle/permission"
)

// The tools of the commands run_command started in the background
// (background.go): command_output reads, command_input writes to a
// command's standard input (which can make it do anything, so it asks
// as a command does), command_stop stops one.

// CommandOutput reads a background command's output.
type CommandOutput struct{ declared[CommandOutput] }

func (CommandOutput) spec() *toolSpec { return &commandOutputSpec }

var commandOutputSpec = newSpec[commandOutputInput]("command_output", KindRead, permission.EffectRead)

type commandOutputInput struct {
	ID          string `json:"id" jsonschema:"the command's id, as run_command gave it (bg1)" check:"minLength=1,maxLength=16"`
	Tail        bool   `json:"tail,omitempty" jsonschema:"the end of all its output kept, instead of what is new since the last read"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"when there is no new output yet, wait up to this many seconds (at most 60) for some, or for the command to end" check:"minimum=0"`
}

func (t CommandOutput) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[commandOutputInput](env, t.Name(), commandOutputSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	return Preview{Title: "Output of " + in.ID}, nil
}

func (t CommandOutput) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[commandOutputInput](env, t.Name(), commandOutputSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	if env.Background == nil {
		return Errorf("command_output: this session runs no command in the background")
	}
	out, err := env.Background.Output(ctx, env.Redactor, in.ID, in.Tail, time.Duration(in.WaitSeconds)*time.Second)
	if err != nil {
		return Errorf("command_output: %v", err)
	}
	return Result{Output: out, Redacted: true}
}
