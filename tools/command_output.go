package tools

import (
	"context"
	"encoding/json"
	"fmt"
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

// CommandInput writes to a background command's standard input.
type CommandInput struct{ declared[CommandInput] }

func (CommandInput) spec() *toolSpec { return &commandInputSpec }

var commandInputSpec = newSpec[commandInputInput]("command_input", KindExecute, permission.EffectExecute)

type commandInputInput struct {
	ID   string `json:"id" jsonschema:"the command's id, as run_command gave it (bg1)" check:"minLength=1,maxLength=16"`
	Text string `json:"text,omitempty" jsonschema:"what to write, as it is: end a line with \n"`
	EOF  bool   `json:"eof,omitempty" jsonschema:"close its input after the text (end of file)"`
}

func (t CommandInput) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[commandInputInput](env, t.Name(), commandInputSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	title := fmt.Sprintf("Write %q to %s", in.Text, in.ID)
	if in.EOF {
		title += " and close its input"
	}
	return Preview{Title: title}, nil
}

func (t CommandInput) Run(_ context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[commandInputInput](env, t.Name(), commandInputSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	if env.Background == nil {
		return Errorf("command_input: this session runs no command in the background")
	}
	if err := env.Background.Input(in.ID, in.Text, in.EOF); err != nil {
		return Errorf("command_input: %v", env.redact(err.Error()))
	}
	out := fmt.Sprintf("[wrote %d bytes to %s's input", len(in.Text), in.ID)
	if in.EOF {
		out += " and closed it"
	}
	return Result{Output: out + "; read what it answers with command_output]"}
}

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
