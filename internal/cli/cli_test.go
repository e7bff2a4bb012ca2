package cli

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/session"
)

// TestParseAll parses flags wherever they stand among the arguments.
func TestParseAll(t *testing.T) {
	for _, c := range []struct {
		args       []string
		cwd, mode  string
		positional []string
	}{
		{[]string{"PROMPT", "--cwd", "D", "--mode", "M"}, "D", "M", []string{"PROMPT"}},
		{[]string{"--cwd", "D", "PROMPT", "--mode=M"}, "D", "M", []string{"PROMPT"}},
		{[]string{"a", "--cwd=D", "b", "-mode", "M", "c"}, "D", "M", []string{"a", "b", "c"}},
		{[]string{"a", "--", "--cwd", "D"}, "", "", []string{"a", "--cwd", "D"}},
		{nil, "", "", nil},
	} {
		fl := flag.NewFlagSet("t", flag.ContinueOnError)
		cwd := fl.String("cwd", "", "")
		mode := fl.String("mode", "", "")
		pos, err := parseAll(fl, c.args)
		if err != nil || *cwd != c.cwd || *mode != c.mode || !slices.Equal(pos, c.positional) {
			t.Errorf("parseAll(%q) = %q, cwd %q, mode %q, %v", c.args, pos, *cwd, *mode, err)
		}
	}
}

// TestPrinterFailedTitle: a call's end carries no title; the printer
// names the call it started.
func TestPrinterFailedTitle(t *testing.T) {
	var out, errs strings.Builder
	p := &printer{stdout: &out, stderr: &errs}
	ctx := context.Background()
	p.Update(ctx, "s", session.Update{Kind: session.UpdateToolCall, Tool: &session.ToolView{ID: "c1", Title: "Read missing.txt", Status: "pending"}})
	p.Update(ctx, "s", session.Update{Kind: session.UpdateToolCallDone, Tool: &session.ToolView{ID: "c1", Status: "failed"}})
	if !strings.Contains(errs.String(), "[Read missing.txt failed]") {
		t.Errorf("stderr = %q", errs.String())
	}
}
