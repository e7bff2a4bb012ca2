package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/app"
)

const logHelp = `Usage: bridle log SESSION [--json] [--context]

Print a session's event log, as stored: every prompt, model answer, tool call
and result, approval, rewind. --context shows instead how each model request
filled the context window. The kinds of event: docs/durability.md.

Flags:
`

// printLog prints one session's events.
func printLog(ctx context.Context, g globals, args []string, w, stderr io.Writer) error {
	fl := flag.NewFlagSet("log", flag.ContinueOnError)
	asJSON := fl.Bool("json", false, "one JSON object per line")
	occupancy := fl.Bool("context", false, "print how each model request filled the context window, as a table")
	ids, code, done := parseCommand(fl, logHelp, args, w, stderr)
	if done {
		return handled(code)
	}
	if len(ids) != 1 {
		return badInput("log needs one session id: bridle log SESSION [--json] [--context] (list them with `bridle sessions`)")
	}
	l, err := g.app().ReadLog(ctx, ids[0])
	if err != nil {
		return err
	}
	if *occupancy {
		return writeContext(w, l, *asJSON)
	}
	return writeLog(w, l, *asJSON)
}

func writeLog(w io.Writer, l app.Log, asJSON bool) error {
	events, errs := l.Events, l.Errs
	if asJSON {
		enc := json.NewEncoder(w)
		for i := range l.Records {
			v, err := l.View(i)
			if err != nil {
				return err
			}
			if err := enc.Encode(v); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tTOKENS\tSUMMARY")
	for i, r := range l.Records {
		sum := ""
		if errs[i] != nil {
			sum = "(" + errs[i].Error() + ")"
		} else {
			sum = event.Summary(events[i].Payload)
			if c := l.Replaces(i); c != nil {
				sum = fmt.Sprintf("summary of events %d–%d (%d events, %d tokens as originals) in %d tokens", c.From, c.Through, c.Events, c.CoveredTokens, c.SummaryTokens)
				if c.WindowAfter > 0 {
					sum += fmt.Sprintf("; the window went from %d to %d tokens (freed %d)", c.WindowBefore, c.WindowAfter, c.FreedTokens)
				}
				sum += ": " + event.Quote(events[i].Payload.(event.Compaction).Goal)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", r.Seq, time.UnixMilli(r.CreatedAt).Format("15:04:05.000"), r.Kind, r.Tokens, sum)
	}
	return tw.Flush()
}

// writeContext prints the context_assembled series: how each model
// request filled the window, and what the window did about it.
func writeContext(w io.Writer, l app.Log, asJSON bool) error {
	enc := json.NewEncoder(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	if !asJSON {
		fmt.Fprintln(tw, "SEQ\tWINDOW\tUSED\tUSE%\tPREFIX\tTASK+PINS\tHISTORY\tTOOLS\tSLACK\tACTION\tDROPPED\tRATIO\tPREFIX-HASH\t")
	}
	n := 0
	for _, e := range l.Events {
		c, ok := e.Payload.(event.ContextAssembled)
		if !ok {
			continue
		}
		n++
		if asJSON {
			if err := enc.Encode(map[string]any{"seq": e.Seq, "window": c.Window, "used": c.Used(), "fixed_prefix": c.FixedPrefix,
				"task_pins": c.TaskPins, "history": c.History, "tool_outputs": c.ToolOutputs, "slack": c.Slack,
				"action": c.Action, "dropped": len(c.Dropped), "ratio": c.Ratio, "prefix_hash": c.PrefixHash}); err != nil {
				return err
			}
			continue
		}
		pct := 0.0
		if c.Window > 0 {
			pct = 100 * float64(c.Used()) / float64(c.Window)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%.2f\t%s\t\n", e.Seq, c.Window, c.Used(), pct,
			c.FixedPrefix, c.TaskPins, c.History, c.ToolOutputs, c.Slack, c.Action, len(c.Dropped), c.Ratio, c.PrefixHash)
	}
	if asJSON {
		return nil
	}
	if n == 0 {
		fmt.Fprintln(w, "no model request in this session yet")
		return nil
	}
	return tw.Flush()
}

func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
