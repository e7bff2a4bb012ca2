package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/bridle-dev/bridle/internal/app"
	"github.com/bridle-dev/bridle/internal/display"
)

const doctorHelp = `Usage: bridle doctor [--json]

Show which sandbox layers this machine has (namespaces, Landlock, seccomp, ...)
and what bridle does without each, whether the file watcher can watch the
current directory, the skills and prompt commands a session there finds,
each language's server (found, missing, off or refused by the settings), and
whether the project's settings there are trusted and applied as you accepted
them (bridle trust). See docs/sandbox.md, docs/code-intelligence.md and
docs/configuration.md.

Flags:
`

// doctor prints which sandbox layers this machine has and what bridle does
// without each, whether the file watcher can watch the current
// directory, and each language's server there: found, missing, off or
// refused by the settings.
func doctor(args []string, w, stderr io.Writer) error {
	fl := flag.NewFlagSet("doctor", flag.ContinueOnError)
	asJSON := fl.Bool("json", false, "the report as one JSON object")
	words, code, done := parseCommand(fl, doctorHelp, args, w, stderr)
	if done {
		return handled(code)
	}
	if len(words) > 0 {
		return badInput("doctor takes no argument, not %q (only --json)", words[0])
	}
	r := app.Doctor()
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintln(w, "bridle sandbox layers on this machine (and the file watcher, on this directory):")
	fmt.Fprint(w, r.String())
	if missing := r.MissingLayers(); len(missing) > 0 {
		fmt.Fprintf(w, "\n%d layer(s) missing: commands still run, with the fallbacks above; each command's result names them too.\n", len(missing))
	}
	if why := r.Unconfined(); why != "" {
		fmt.Fprintf(w, "Commands are not kept in here (%s): full-auto asks before the first command of each session.\n", why)
	}
	if set, err := app.ExtensionsHere(app.DefaultDB()); err == nil {
		fmt.Fprintln(w, "\nSkills and prompt commands of a session in this directory (the project's are the repository's text):")
		fmt.Fprint(w, set.Describe())
	}
	fmt.Fprintln(w, "\nLanguage servers for this directory (run in the same box, workspace read-only; docs/code-intelligence.md):")
	fmt.Fprint(w, r.ServersString())
	fmt.Fprintln(w, "\nTrust in this directory's project settings (.bridle/settings.json; docs/configuration.md):")
	fmt.Fprint(w, display.Text(r.TrustString()))
	return nil
}
