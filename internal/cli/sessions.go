package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/bridle-dev/bridle/internal/app"
	"github.com/bridle-dev/bridle/internal/display"
)

const sessionsHelp = `Usage: bridle sessions [--json]

List the database's sessions, newest first, each subagent's and fork's under
the session it came from. A database that does not exist lists none (and is
not made).

Flags:
`

// listSessions prints sessions, newest first.
func listSessions(ctx context.Context, g globals, args []string, w, stderr io.Writer) error {
	fl := flag.NewFlagSet("sessions", flag.ContinueOnError)
	asJSON := fl.Bool("json", false, "one JSON object per line")
	extra, code, done := parseCommand(fl, sessionsHelp, args, w, stderr)
	if done {
		return handled(code)
	}
	if len(extra) > 0 {
		return badInput("sessions takes no argument, not %q (only --json)", extra[0])
	}
	rows, err := g.app().Sessions(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(w)
		for _, r := range rows {
			if err := enc.Encode(map[string]any{
				"sessionId": r.ID, "cwd": r.Cwd, "title": r.Title, "model": r.Model, "mode": r.Mode,
				"parentId": r.ParentID, "forkOf": r.ForkOf, "createdAt": stamp(r.CreatedAt), "updatedAt": stamp(r.UpdatedAt),
			}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintf(w, "no sessions in %s\n", g.db)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tUPDATED\tMODEL\tMODE\tCWD\tTITLE")
	for _, r := range app.SessionTree(rows) {
		id := r.ID
		switch {
		case r.ParentID != "":
			id = "  └ " + id // a subagent's session, under its parent
		case r.ForkOf != "":
			id = "  ⑂ " + id // a fork, under the session it was made from
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", id, time.UnixMilli(r.UpdatedAt).Format("2006-01-02 15:04"), r.Model, r.Mode, r.Cwd, display.Label(r.Title))
	}
	return tw.Flush()
}
