package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/session"
	"github.com/bridle-dev/bridle/store"
)

// printLog prints one session's events.
func printLog(ctx context.Context, g globals, args []string, w io.Writer) error {
	fl := flag.NewFlagSet("log", flag.ContinueOnError)
	asJSON := fl.Bool("json", false, "one JSON object per line")
	occupancy := fl.Bool("context", false, "print how each model request filled the context window, as a table")
	ids, err := parseAll(fl, args)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return errors.New("log needs one session id: bridle log SESSION [--json] [--context] (list them with `bridle sessions`)")
	}
	st, err := openExisting(ctx, g.db)
	if err != nil {
		return err
	}
	defer st.Close()
	id := ids[0]
	if _, err := st.Session(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no session %q in %s; list them with `bridle sessions`", id, g.db)
		}
		return err
	}
	recs, err := st.Events(ctx, id, 0)
	if err != nil {
		return err
	}
	if *occupancy {
		return writeContext(w, recs, *asJSON)
	}
	return writeLog(w, recs, *asJSON)
}

func writeLog(w io.Writer, recs []store.Record, asJSON bool) error {
	events, errs := decodeRecords(recs)
	if asJSON {
		enc := json.NewEncoder(w)
		for i, r := range recs {
			v, err := session.ViewEvent(events, i, r.Payload)
			if err != nil {
				return err
			}
			v.Kind = r.Kind // an event that cannot be decoded keeps its kind
			if err := enc.Encode(v); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tTOKENS\tSUMMARY")
	for i, r := range recs {
		sum := ""
		if errs[i] != nil {
			sum = "(" + errs[i].Error() + ")"
		} else {
			sum = event.Summary(events[i].Payload)
			if c := session.ReplacesOf(events, r.Seq); c != nil {
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

// decodeRecords decodes a log; an event that cannot be decoded keeps its
// error and a nil payload, so the rest still prints.
func decodeRecords(recs []store.Record) ([]event.Event, []error) {
	events := make([]event.Event, len(recs))
	errs := make([]error, len(recs))
	for i, r := range recs {
		p, err := event.Decode(event.Kind(r.Kind), r.Payload)
		events[i] = event.Event{Seq: r.Seq, Time: time.UnixMilli(r.CreatedAt), Tokens: r.Tokens, Payload: p}
		if err != nil {
			errs[i] = err
			events[i].Payload = event.ModeChanged{} // never projected
		}
	}
	return events, errs
}

// writeContext prints the context_assembled series: how each model
// request filled the window, and what the window did about it.
func writeContext(w io.Writer, recs []store.Record, asJSON bool) error {
	events, _ := decodeRecords(recs)
	enc := json.NewEncoder(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	if !asJSON {
		fmt.Fprintln(tw, "SEQ\tWINDOW\tUSED\tUSE%\tPREFIX\tTASK+PINS\tHISTORY\tTOOLS\tSLACK\tACTION\tDROPPED\tRATIO\tPREFIX-HASH\t")
	}
	n := 0
	for _, e := range events {
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
