package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bridle-dev/bridle/permission"
)

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
	// The question shows the text as the model sees output: redacted, and
	// cut (up to 64 KiB may be written).
	text := env.redact(in.Text)
	if r := []rune(text); len(r) > 200 {
		text = string(r[:200]) + "…"
	}
	title := fmt.Sprintf("Write %q to %s", text, in.ID)
	if in.EOF {
		title += " and close its input"
	}
	// "Allow for this session" covers this command's input only: a
	// shell started in the background takes any text as a command.
	var command string
	if env.Background != nil {
		command = env.redact(env.Background.Command(in.ID))
	}
	sc := permission.InputScope(in.ID, command)
	return Preview{Title: title, Scope: &sc}, nil
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
