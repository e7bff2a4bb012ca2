package session

import (
	"testing"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/tools"
)

func TestScopeAndStandingAnswers(t *testing.T) {
	root, err := confine.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := &Session{root: root}
	loc := func(paths ...string) tools.Preview {
		var p tools.Preview
		for _, x := range paths {
			p.Locations = append(p.Locations, tools.Location{Path: x})
		}
		return p
	}
	abs := func(rel string) string { return root.Dir() + "/" + rel }

	tests := []struct {
		name    string
		granted tools.Preview // the call a session grant was given for
		call    tools.Preview // a later call
		want    bool
		pattern string
	}{
		{"same directory", loc(abs("src/app/a.go")), loc("src/app/b.go"), true, "src/app/**"},
		{"subdirectory", loc("src/app/a.go"), loc(abs("src/app/x/y.go")), true, "src/app/**"},
		{"sibling directory", loc("src/app/a.go"), loc("src/lib/a.go"), false, "src/app/**"},
		{"prefix is not a directory", loc("src/app/a.go"), loc("src/apple/a.go"), false, "src/app/**"},
		{"several files widen to their common directory", loc("src/a/x.go", "src/b/y.go"), loc("src/c/z.go"), true, "src/**"},
		{"top level file covers the workspace", loc("README.md"), loc("deep/er/file"), true, "**"},
		{"workspace grant never covers outside paths", loc("README.md"), loc("/etc/passwd"), false, "**"},
		{"one path outside fails the whole call", loc("src/a.go"), loc("src/b.go", "/etc/passwd"), false, "src/**"},
		{"exact command", tools.Preview{Command: "go test ./..."}, tools.Preview{Command: "go test ./..."}, true, "go test ./..."},
		{"another command", tools.Preview{Command: "go test ./..."}, tools.Preview{Command: "go test ./... && rm -rf /"}, false, "go test ./..."},
		{"no target covers every call", tools.Preview{}, loc("x"), true, "*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := s.scopeOf(tt.granted)
			if g.Pattern != tt.pattern {
				t.Errorf("pattern = %q, want %q", g.Pattern, tt.pattern)
			}
			log := []event.Event{{Payload: event.ApprovalGranted{Tool: "edit_file", Scope: "session", Pattern: g.Pattern}}}
			got := standing(log, "edit_file", s.scopeOf(tt.call)) == optAllowAlways
			if got != tt.want {
				t.Errorf("grant for %q covers %+v = %v, want %v", g.Pattern, tt.call, got, tt.want)
			}
			if standing(log, "write_file", s.scopeOf(tt.call)) != "" {
				t.Errorf("a grant for edit_file covered write_file")
			}
		})
	}

	// The latest session-wide answer wins, and once-answers never stand.
	call := s.scopeOf(loc("src/a.go"))
	log := []event.Event{
		{Payload: event.ApprovalGranted{Tool: "edit_file", Scope: "session", Pattern: "src/**"}},
		{Payload: event.ApprovalDenied{Tool: "edit_file", Scope: "session", Pattern: "src/**"}},
		{Payload: event.ApprovalGranted{Tool: "edit_file", Scope: "once"}},
	}
	if got := standing(log, "edit_file", call); got != optRejectAlways {
		t.Errorf("standing = %q, want the later rejection", got)
	}
}
