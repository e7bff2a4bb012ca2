package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

// rewind is `bridle rewind SESSION N`: the session goes back to before
// its prompt N, files and conversation, as `/rewind N` does in an editor;
// `bridle rewind SESSION undo` takes the last rewind back, and `bridle
// rewind SESSION` lists the prompts to choose from.
// No one is there to answer, so a file the user changed since the agent
// is left alone (and named).
func rewind(ctx context.Context, g globals, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("rewind", flag.ContinueOnError)
	fl.SetOutput(stderr)
	words, err := parseAll(fl, args)
	if err != nil {
		return err
	}
	if len(words) != 1 && len(words) != 2 {
		return errors.New("rewind needs a session and a prompt number: bridle rewind SESSION N, or SESSION undo (bridle rewind SESSION lists the prompts)")
	}
	arg := "" // none: list the prompts, with the files each changed
	if len(words) == 2 {
		if n, err := strconv.Atoi(words[1]); words[1] != "undo" && (err != nil || n < 1) {
			return fmt.Errorf("rewind: %q is not a prompt number (1 is the session's first prompt) nor undo", words[1])
		}
		arg = words[1]
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &printer{stdout: stdout, stderr: stderr}
	err = g.app().Rewind(ctx, out, words[0], arg)
	out.finish()
	return err
}
