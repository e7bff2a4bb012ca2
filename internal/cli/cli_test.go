package cli

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/acp"
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

// TestHeadlessFailedTitle: a call's end carries no title; the client
// names the call it started.
func TestHeadlessFailedTitle(t *testing.T) {
	var out, errs strings.Builder
	p := newHeadless(&out, &errs, false, nil)
	ctx := context.Background()
	pending, failed := acp.ToolCallStatusPending, acp.ToolCallStatusFailed
	p.Update(ctx, "s", acp.SessionUpdate{ToolCall: &acp.ToolCall{ToolCallID: "c1", Title: "Read missing.txt", Status: &pending}})
	p.Update(ctx, "s", acp.SessionUpdate{ToolCallUpdate: &acp.ToolCallUpdate{ToolCallID: "c1", Status: &failed}})
	if !strings.Contains(errs.String(), "[Read missing.txt failed]") {
		t.Errorf("stderr = %q", errs.String())
	}
}

// TestSplitCommand takes the global flags wherever they stand, up to "--".
func TestSplitCommand(t *testing.T) {
	for _, c := range []struct {
		args         []string
		cmd          string
		global, rest []string
	}{
		{[]string{"--db", "D", "run", "P", "--cwd", "C"}, "run", []string{"--db", "D"}, []string{"P", "--cwd", "C"}},
		{[]string{"run", "P", "--model=M", "--cwd", "C", "--db", "D"}, "run", []string{"--model=M", "--db", "D"}, []string{"P", "--cwd", "C"}},
		{[]string{"log", "S", "--json", "--version"}, "log", []string{"--version"}, []string{"S", "--json"}},
		{[]string{"run", "--", "--db", "x"}, "run", nil, []string{"--", "--db", "x"}},
		{[]string{"--db", "D"}, "", []string{"--db", "D"}, nil},
		{[]string{"--help", "run"}, "run", []string{"--help"}, nil},
		{[]string{"run", "--help"}, "run", nil, []string{"--help"}},
		{[]string{"rewind", "-h", "--db", "D"}, "rewind", []string{"--db", "D"}, []string{"-h"}},
	} {
		cmd, global, rest := splitCommand(c.args)
		if cmd != c.cmd || !slices.Equal(global, c.global) || !slices.Equal(rest, c.rest) {
			t.Errorf("splitCommand(%q) = %q, %q, %q", c.args, cmd, global, rest)
		}
	}
}

// TestShellQuote quotes what a shell would split or expand.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"go":             "go",
		"go test ./...":  "'go test ./...'",
		"src/**":         "'src/**'",
		"it's":           `'it'\''s'`,
		"":               "''",
		"a=b,c:d@e+f/g.": "a=b,c:d@e+f/g.",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestHeadlessApproval: an --allow pattern answers a question by the
// standing answers' rules (a command exactly, paths by glob, * all), and
// a refusal's advice never names the mode in use.
func TestHeadlessApproval(t *testing.T) {
	options := []acp.PermissionOption{
		{OptionID: "allow_once", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionID: "reject_once", Kind: acp.PermissionOptionKindRejectOnce},
	}
	req := func(command string, paths ...string) acp.RequestPermissionRequest {
		title := "call"
		scope := map[string]any{"pattern": command}
		if command != "" {
			scope["command"] = command
		} else {
			scope["pattern"], scope["paths"] = "src/**", paths
		}
		return acp.RequestPermissionRequest{ToolCall: acp.ToolCallUpdate{ToolCallID: "c", Title: &title}, Options: options,
			Meta: map[string]any{"bridle": map[string]any{"tool": "t", "scope": scope}}}
	}
	for _, c := range []struct {
		allow  []string
		mode   string
		req    acp.RequestPermissionRequest
		want   string
		advice string // in stderr when refused
		not    string // never in stderr
	}{
		{[]string{"go test ./..."}, "ask", req("go test ./..."), "allow_once", "", ""},
		{[]string{"go test"}, "ask", req("go test ./..."), "reject_once", "--allow 'go test ./...', or --mode full-auto", ""},
		{[]string{"src/**"}, "ask", req("", "src/a.go", "src/b/c.go"), "allow_once", "", ""},
		{[]string{"src/**"}, "ask", req("", "src/a.go", "docs/x.md"), "reject_once", "--mode auto-edit", ""},
		{[]string{"src/**"}, "ask", req("rm -rf src"), "reject_once", "--mode full-auto", ""},
		{[]string{"*"}, "ask", req("anything"), "allow_once", "", ""},
		{nil, "auto-edit", req("make"), "reject_once", "--allow make, or --mode full-auto", "auto-edit"},
		{nil, "full-auto", req("make"), "reject_once", "--allow make", "--mode"},
		{nil, "auto-edit", req("", "src/a.go"), "reject_once", "--allow 'src/**'", "--mode"},
	} {
		var out, errs strings.Builder
		h := newHeadless(&out, &errs, false, c.allow)
		h.mode = c.mode
		resp, _ := h.RequestPermission(context.Background(), c.req)
		got := ""
		if resp.Outcome.Selected != nil {
			got = string(resp.Outcome.Selected.OptionID)
		}
		if got != c.want || !strings.Contains(errs.String(), c.advice) || (c.not != "" && strings.Contains(errs.String(), c.not)) {
			t.Errorf("allow %q, mode %s, %v: answered %q, stderr %q", c.allow, c.mode, c.req.Meta, got, errs.String())
		}
	}
}
