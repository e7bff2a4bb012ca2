package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bridle-dev/bridle/rpc"
	"github.com/bridle-dev/bridle/session/event"
	"github.com/bridle-dev/bridle/store"
)

func openExisting(ctx context.Context, path string) (*store.Store, error) {
	st, err := store.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// listSessions prints sessions, newest first.
func listSessions(ctx context.Context, g globals, args []string, w io.Writer) error {
	fl := flag.NewFlagSet("sessions", flag.ContinueOnError)
	asJSON := fl.Bool("json", false, "one JSON object per line")
	extra, err := parseAll(fl, args)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("sessions: unexpected argument %q (it takes only --json)", extra[0])
	}
	st, err := openExisting(ctx, g.db)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, _, err := st.Sessions(ctx, store.ListOptions{Children: true})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(w)
		for _, r := range rows {
			if err := enc.Encode(map[string]any{
				"sessionId": r.ID, "cwd": r.Cwd, "title": r.Title, "model": r.Model, "mode": r.Mode,
				"parentId": r.ParentID, "createdAt": stamp(r.CreatedAt), "updatedAt": stamp(r.UpdatedAt),
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
	for _, r := range tree(rows) {
		id := r.ID
		if r.ParentID != "" {
			id = "  └ " + id // a subagent's session, under its parent
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", id, time.UnixMilli(r.UpdatedAt).Format("2006-01-02 15:04"), r.Model, r.Mode, r.Cwd, r.Title)
	}
	return tw.Flush()
}

// tree orders sessions so that each subagent's follows its parent's;
// parents keep their order (newest first), and so do children.
func tree(rows []store.Session) []store.Session {
	children := map[string][]store.Session{}
	ids := map[string]bool{}
	for _, r := range rows {
		ids[r.ID] = true
		if r.ParentID != "" {
			children[r.ParentID] = append(children[r.ParentID], r)
		}
	}
	var out []store.Session
	var add func(r store.Session)
	add = func(r store.Session) {
		out = append(out, r)
		for _, c := range children[r.ID] {
			add(c)
		}
	}
	for _, r := range rows {
		if r.ParentID == "" || !ids[r.ParentID] {
			add(r)
		}
	}
	return out
}

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
		for _, r := range recs {
			v := rpc.EventView{Seq: r.Seq, Kind: r.Kind, Time: stamp(r.CreatedAt), Tokens: r.Tokens, Payload: r.Payload}
			if r.Kind == string(event.KindCompaction) {
				v.Replaces = rpc.ReplacesOf(events, r.Seq)
			}
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
			sum = summarize(events[i].Payload)
			if c := rpc.ReplacesOf(events, r.Seq); c != nil {
				sum = fmt.Sprintf("replaces events %d–%d (%d events, %d tokens) with %d tokens: %s",
					c.From, c.Through, c.Events, c.Tokens, c.SummaryTokens, quote(events[i].Payload.(event.Compaction).Goal))
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

// summarize renders one event on one line.
func summarize(p event.Payload) string {
	switch v := p.(type) {
	case event.SessionStarted:
		return fmt.Sprintf("cwd=%s model=%s mode=%s", v.Cwd, v.Model, v.Mode)
	case event.UserMessage:
		return quote(v.Text())
	case event.AssistantMessage:
		s := quote(v.Text)
		for _, c := range v.ToolCalls {
			s += fmt.Sprintf(" → %s %s", c.Name, clip(string(c.Input), 60))
		}
		return strings.TrimSpace(s + " [" + v.StopReason + "]")
	case event.ToolStarted:
		return fmt.Sprintf("%s key=%s", v.Name, v.Key)
	case event.ToolResult:
		return fmt.Sprintf("%s %s key=%s: %s", v.Name, v.Status, v.Key, quote(v.Output))
	case event.ApprovalRequest:
		return fmt.Sprintf("%s %s", v.Tool, quote(v.Summary))
	case event.ApprovalGranted:
		return fmt.Sprintf("%s scope=%s %s", v.Tool, v.Scope, v.Pattern)
	case event.ApprovalDenied:
		return fmt.Sprintf("%s scope=%s %s", v.Tool, v.Scope, v.Pattern)
	case event.Interrupted:
		return fmt.Sprintf("%s, partial: %s", v.Reason, quote(v.Text))
	case event.Compaction:
		return fmt.Sprintf("replaces events through %d: %s", v.Through, quote(v.Summary))
	case event.ConstraintPinned:
		return fmt.Sprintf("(%s) %s", v.Source, quote(v.Text))
	case event.DecisionRecorded:
		return fmt.Sprintf("(%s) %s", v.Source, quote(v.Text))
	case event.ContextAssembled:
		return fmt.Sprintf("used %d of %d (prefix %d, task+pins %d, history %d, tools %d, slack %d) action=%s",
			v.Used(), v.Window, v.FixedPrefix, v.TaskPins, v.History, v.ToolOutputs, v.Slack, v.Action)
	case event.ModeChanged:
		return v.From + " → " + v.To
	case event.ModelChanged:
		return v.From + " → " + v.To
	case event.FileChanged:
		what := "changed"
		if v.Version == "" {
			what = "deleted"
		}
		return fmt.Sprintf("%s %s on disk after the read at turn %d", v.Path, what, v.Turn)
	case event.SubagentStarted:
		return fmt.Sprintf("child=%s %s", v.ChildID, quote(v.Prompt))
	case event.SubagentFinished:
		return fmt.Sprintf("child=%s %s: %s", v.ChildID, v.Status, quote(v.Answer))
	case event.TurnFinished:
		return v.StopReason
	case event.ProviderError:
		return fmt.Sprintf("%s %s: %s", v.Provider, v.ErrKind, v.Message)
	}
	return ""
}

func quote(s string) string { return fmt.Sprintf("%q", clip(s, 80)) }

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
