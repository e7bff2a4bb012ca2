package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/internal/app"
)

const rewindHelp = `Usage: bridle rewind SESSION [N|undo] [--overwrite|--keep]

Go back to before the session's prompt N (1 is its first): the files the
agent changed since are put back, and the conversation goes on from there,
as /rewind N does in an editor. undo takes the last rewind back. With no N,
list the prompts with the files each changed.

A file you changed after the agent did is yours: the rewind asks whether to
put it back too, on the terminal when stdin is one. --overwrite puts such
files back, --keep leaves them as they are; without either and without a
terminal to ask on, they are left as they are, and named.

Flags:
`

// rewind is `bridle rewind SESSION N`: the session goes back to before
// its prompt N, files and conversation, as `/rewind N` does in an editor;
// `bridle rewind SESSION undo` takes the last rewind back, and `bridle
// rewind SESSION` lists the prompts to choose from. It returns the exit
// code.
func rewind(ctx context.Context, g globals, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("rewind", flag.ContinueOnError)
	overwrite := fl.Bool("overwrite", false, "put back the files you changed since the agent too")
	keep := fl.Bool("keep", false, "leave the files you changed since the agent as they are")
	words, code, done := parseCommand(fl, rewindHelp, args, stdout, stderr)
	if done {
		return code
	}
	if len(words) != 1 && len(words) != 2 {
		return fail(stderr, exitBadInput, errors.New("rewind needs a session and a prompt number: bridle rewind SESSION N, or SESSION undo (bridle rewind SESSION lists the prompts)"))
	}
	if *overwrite && *keep {
		return fail(stderr, exitBadInput, errors.New("--overwrite and --keep say opposite things: give one"))
	}
	arg := "" // none: list the prompts, with the files each changed
	if len(words) == 2 {
		if n, err := strconv.Atoi(words[1]); words[1] != "undo" && (err != nil || n < 1) {
			return fail(stderr, exitBadInput, fmt.Errorf("rewind: %q is not a prompt number (1 is the session's first prompt) nor undo", words[1]))
		}
		arg = words[1]
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	h := newHeadless(stdout, stderr, false, nil)
	c := &rewinder{headless: h, stdin: stdin, overwrite: *overwrite, keep: *keep}
	err := g.app().Rewind(ctx, c, words[0], arg)
	h.finish(app.RunResult{}, 0, nil)
	switch {
	case errors.Is(err, context.Canceled):
		return exitCancelled
	case errors.Is(err, app.ErrBadInput):
		return fail(stderr, exitBadInput, err)
	case err != nil:
		return fail(stderr, exitFailed, err)
	}
	return exitOK
}

// rewinder is the client of `bridle rewind`: the only question a rewind
// asks is whether to put back the files the user changed since the agent,
// and the flags, or the user on the terminal, answer it.
type rewinder struct {
	*headless
	stdin           io.Reader
	overwrite, keep bool
}

func (r *rewinder) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	switch {
	case r.overwrite:
		return choose(req, acp.PermissionOptionKindAllowOnce), nil
	case r.keep:
		return choose(req, acp.PermissionOptionKindRejectOnce), nil
	}
	f, ok := r.stdin.(*os.File)
	if !ok || !isTerminal(f) {
		fmt.Fprintln(r.stderr, "bridle: files you changed since the agent are left as they are: no terminal to ask on; --overwrite puts them back too, --keep leaves them without asking")
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &struct{}{}}}, nil
	}
	var paths []string
	for _, l := range req.ToolCall.Locations {
		paths = append(paths, "  "+l.Path)
	}
	fmt.Fprintf(r.stderr, "You changed these files after the agent did:\n%s\nPut them back as they were before that prompt too? [y/N] ", strings.Join(paths, "\n"))
	answer := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(f).ReadString('\n')
		answer <- strings.ToLower(strings.TrimSpace(s))
	}()
	select {
	case <-ctx.Done():
		return acp.RequestPermissionResponse{}, ctx.Err()
	case a := <-answer:
		if a == "y" || a == "yes" {
			return choose(req, acp.PermissionOptionKindAllowOnce), nil
		}
		return choose(req, acp.PermissionOptionKindRejectOnce), nil
	}
}
