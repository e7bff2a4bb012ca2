package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/bridle-dev/bridle/internal/app"
	"github.com/bridle-dev/bridle/internal/display"
)

const trustHelp = `Usage: bridle trust [DIR]
       bridle trust --list [--json]

Accept the settings of a project you trust, as they are now. A project you
list in "trusted_projects" of your own settings may set what a repository's
file otherwise may not: providers (where your keys are sent), hooks (commands
that run unasked) and language servers' commands. bridle applies them only as
you accepted them: the first session in a directory you list records its
.bridle/settings.json as accepted, and when the file changes after that (the
agent, a command or a pull may change it), they are not applied, and you are
told, until you review the file and run bridle trust. A directory below one
you list has its file accepted only by bridle trust.

bridle trust prints what it accepts (a header's value is not shown) and
records it in bridle's data directory. DIR is the project's directory, the
one a session opens in (default: the current directory). --list shows the
records and whether each project's file is still as accepted. See
docs/configuration.md.

Flags:
`

// trust accepts a project's settings, or lists what was accepted.
func trust(g globals, args []string, w, stderr io.Writer) error {
	fl := flag.NewFlagSet("trust", flag.ContinueOnError)
	list := fl.Bool("list", false, "list the projects accepted, and whether each file is still as accepted")
	asJSON := fl.Bool("json", false, "with --list: one JSON object per line")
	words, code, done := parseCommand(fl, trustHelp, args, w, stderr)
	if done {
		return handled(code)
	}
	if *list {
		if len(words) > 0 {
			return badInput("trust --list takes no directory, not %q", words[0])
		}
		return trustList(g, *asJSON, w, stderr)
	}
	if *asJSON {
		return badInput("trust: --json goes with --list")
	}
	if len(words) > 1 {
		return badInput("trust takes one directory, not %d arguments", len(words))
	}
	dir := "."
	if len(words) == 1 {
		dir = words[0]
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return badInput("trust: %q: %v", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return badInput("trust: %s is not a directory: name the project's directory, where its .bridle/settings.json is", abs)
	}
	r, err := app.Trust(g.db, abs)
	if err != nil {
		return err
	}
	was := map[string]string{"none": "", "same": " (as you had accepted it already)", "changed": " (it changed since you last accepted it)",
		"unreadable": " (the record of what you accepted before could not be read, and is replaced)"}[r.Before]
	switch {
	case !r.Exists:
		fmt.Fprintf(w, "%s has no .bridle/settings.json: recorded as such, so that a file made later is not applied until you accept it.\n", display.Label(r.Project))
	case len(r.Lines) == 0:
		fmt.Fprintf(w, "%s sets nothing that needs trust%s: recorded, so that a change setting some is not applied until you accept it.\n", display.Label(r.File), was)
	default:
		fmt.Fprintf(w, "Accepted what %s sets that only a trusted project may set%s:\n", display.Label(r.File), was)
		for _, l := range r.Lines {
			fmt.Fprintf(w, "  %s\n", display.Label(l))
		}
		fmt.Fprintf(w, "Sessions in %s apply these until the file changes; then they are not applied until you run bridle trust again.\n", display.Label(r.Project))
	}
	return nil
}

// trustList prints the records of trust.
func trustList(g globals, asJSON bool, w, stderr io.Writer) error {
	states, errs := app.TrustRecords(g.db)
	for _, err := range errs {
		fmt.Fprintln(stderr, "bridle: trust:", err)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		for _, s := range states {
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
		return nil
	}
	if len(states) == 0 {
		fmt.Fprintln(w, "no project's settings accepted yet")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tACCEPTED\tPROJECT")
	for _, s := range states {
		state := "as accepted"
		switch {
		case s.Problem != "":
			state = "unreadable: " + s.Problem
		case !s.Current:
			state = "CHANGED: not applied until bridle trust"
		}
		if !s.Listed {
			state += " (no longer in trusted_projects)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", display.Label(state), s.Accepted.Local().Format("2006-01-02 15:04"), display.Label(s.Project))
	}
	return tw.Flush()
}
