package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/bridle-dev/bridle/sandbox/box"
)

// doctor prints which sandbox layers this machine has and what bridle does
// without each.
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
	r := box.New(box.Options{}).Report()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintln(w, "bridle sandbox layers on this machine:")
	fmt.Fprint(w, r.String())
	if missing := r.MissingLayers(); len(missing) > 0 {
		fmt.Fprintf(w, "\n%d layer(s) missing: commands still run, with the fallbacks above; each command's result names them too.\n", len(missing))
	}
	return nil
}
