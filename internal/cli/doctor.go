package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/bridle-dev/bridle/internal/app"
)

// doctor prints which sandbox layers this machine has and what bridle does
// without each, whether the file watcher can watch the current
// directory, and each language's server there: found, missing, off or
// refused by the settings.
func doctor(args []string, w io.Writer) error {
	asJSON := false
	for _, a := range args {
		switch a {
		case "--json", "-json":
			asJSON = true
		default:
			return fmt.Errorf("doctor: unknown argument %q (it takes only --json)", a)
		}
	}
	r := app.Doctor()
	if asJSON {
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
	fmt.Fprintln(w, "\nLanguage servers for this directory (run in the same box, workspace read-only; docs/code-intelligence.md):")
	fmt.Fprint(w, r.ServersString())
	return nil
}
