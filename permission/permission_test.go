package permission

import (
	"fmt"
	"slices"
	"testing"
)

var (
	modes   = []Mode{ModeReadOnly, ModeAsk, ModeAutoEdit, ModeFullAuto}
	effects = []Effect{EffectNone, EffectRead, EffectEdit, EffectExecute}
)

// TestForMode is the whole mode × effect table.
func TestForMode(t *testing.T) {
	want := map[Mode][4]Decision{ // indexed by effect: none, read, edit, execute
		ModeReadOnly: {Allow, Allow, Deny, Deny},
		ModeAsk:      {Allow, Allow, Ask, Ask},
		ModeAutoEdit: {Allow, Allow, Allow, Ask},
		ModeFullAuto: {Allow, Allow, Allow, Allow},
	}
	for _, m := range modes {
		for _, e := range effects {
			if got := ForMode(m, e); got != want[m][e] {
				t.Errorf("ForMode(%s, %d) = %s, want %s", m, e, got, want[m][e])
			}
			if got := Offered(m, e); got != (want[m][e] != Deny) {
				t.Errorf("Offered(%s, %d) = %v", m, e, got)
			}
		}
	}
}

// TestDecide is mode × effect × standing answer: a standing answer
// settles only what the mode would ask about.
func TestDecide(t *testing.T) {
	call := ScopeOf("/w", "", []string{"/w/src/app/main.go"})
	standing := []struct {
		name    string
		answers []Answer
		// onAsk is the verdict when the mode would ask.
		onAsk Verdict
	}{
		{"none", nil, Verdict{Decision: Ask}},
		{"allow_always", []Answer{{"edit_file", AllowAlways, "src/app/**"}}, Verdict{Allow, AllowAlways}},
		{"reject_always", []Answer{{"edit_file", RejectAlways, "src/app/**"}}, Verdict{Deny, RejectAlways}},
		{"other tool", []Answer{{"write_file", AllowAlways, "**"}}, Verdict{Decision: Ask}},
		{"other dir", []Answer{{"edit_file", AllowAlways, "src/lib/**"}}, Verdict{Decision: Ask}},
	}
	for _, m := range modes {
		for _, e := range effects {
			for _, s := range standing {
				t.Run(fmt.Sprintf("%s/%d/%s", m, e, s.name), func(t *testing.T) {
					got := Decide(m, e, s.answers, "edit_file", call)
					want := Verdict{Decision: ForMode(m, e)}
					if want.Decision == Ask {
						want = s.onAsk
					}
					if got != want {
						t.Errorf("got %+v, want %+v", got, want)
					}
				})
			}
		}
	}
}

func TestStandingLatestWins(t *testing.T) {
	call := ScopeOf("/w", "", []string{"/w/src/app/main.go"})
	allow := Answer{"edit_file", AllowAlways, "src/app/**"}
	reject := Answer{"edit_file", RejectAlways, "src/**"}
	elsewhere := Answer{"edit_file", RejectAlways, "docs/**"}
	for _, tc := range []struct {
		answers []Answer
		want    string
	}{
		{[]Answer{allow}, AllowAlways},
		{[]Answer{allow, reject}, RejectAlways},
		{[]Answer{reject, allow}, AllowAlways},
		{[]Answer{reject, allow, elsewhere}, AllowAlways}, // a later answer that does not cover the call changes nothing
		{[]Answer{allow, {"edit_file", AllowOnce, "*"}}, AllowAlways},
		{[]Answer{allow, {"edit_file", RejectAlways, "*"}}, RejectAlways},
		{nil, ""},
	} {
		if got := Standing(tc.answers, "edit_file", call); got != tc.want {
			t.Errorf("Standing(%v) = %q, want %q", tc.answers, got, tc.want)
		}
	}
}

func TestScopeOf(t *testing.T) {
	for _, tc := range []struct {
		command string
		paths   []string
		want    Scope
	}{
		{"go test ./...", nil, Scope{Pattern: "go test ./...", Label: "the command `go test ./...`", Command: "go test ./..."}},
		{"", nil, Scope{Pattern: "*", Label: "every call"}},
		{"", []string{"/w/src/app/a.go"}, Scope{Pattern: "src/app/**", Label: "files under src/app/", Paths: []string{"src/app/a.go"}}},
		{"", []string{"/w/src/app/a.go", "/w/src/lib/b.go"}, Scope{Pattern: "src/**", Label: "files under src/", Paths: []string{"src/app/a.go", "src/lib/b.go"}}},
		{"", []string{"/w/a.go"}, Scope{Pattern: "**", Label: "any file in the workspace", Paths: []string{"a.go"}}},
		{"", []string{"src/x/../y.go"}, Scope{Pattern: "src/**", Label: "files under src/", Paths: []string{"src/y.go"}}},
		{"", []string{"/etc/passwd"}, Scope{Pattern: "/etc/**", Label: "files under /etc/", Paths: []string{"/etc/passwd"}}},
	} {
		got := ScopeOf("/w", tc.command, tc.paths)
		if got.Pattern != tc.want.Pattern || got.Label != tc.want.Label || got.Command != tc.want.Command || !slices.Equal(got.Paths, tc.want.Paths) {
			t.Errorf("ScopeOf(%q, %v) = %+v, want %+v", tc.command, tc.paths, got, tc.want)
		}
	}
}

func TestMatches(t *testing.T) {
	app := ScopeOf("/w", "", []string{"/w/src/app/a.go"})
	deep := ScopeOf("/w", "", []string{"/w/src/app/x/y/z.go"})
	both := ScopeOf("/w", "", []string{"/w/src/app/a.go", "/w/src/lib/b.go"})
	outside := ScopeOf("/w", "", []string{"/etc/passwd"})
	cmd := ScopeOf("/w", "make test", nil)
	none := ScopeOf("/w", "", nil)
	input := InputScope("bg1", "npm run dev")
	// What Rel leaves of paths outside a workspace on Windows.
	drive := Scope{Paths: []string{"C:/Users/u/.ssh/id_ed25519"}}
	lower := Scope{Paths: []string{"d:/x"}}
	unc := Scope{Paths: []string{"//server/share/x"}}
	driveRel := Scope{Paths: []string{"C:x"}}
	for _, tc := range []struct {
		call    Scope
		pattern string
		want    bool
	}{
		{app, "src/app/**", true},
		{deep, "src/app/**", true},
		{app, "src/**", true},
		{app, "src/ap/**", false}, // a prefix of a name is not its directory
		{app, "src/lib/**", false},
		{both, "src/app/**", false}, // every path must match
		{both, "src/**", true},
		{app, "**", true},
		{outside, "**", false}, // ** is the workspace, not the machine
		{app, "*", true},
		{outside, "*", true},
		{app, "src/app/a.go", true}, // an exact path
		{app, "src/app/b.go", false},
		{cmd, "make test", true},
		{cmd, "make test ", false}, // commands match exactly
		{cmd, "make", false},
		{cmd, "**", false},
		{cmd, "*", true},
		{none, "**", false},
		{none, "*", true},
		{drive, "**", false}, // on Windows too
		{lower, "**", false},
		{unc, "**", false},
		{driveRel, "**", false},
		{drive, "*", true},
		{input, "input:bg1", true},
		{input, "input:bg2", false}, // another command's input
		{input, "**", false},
		{input, "npm run dev", false}, // running a command is not writing to one
		{cmd, "input:bg1", false},
	} {
		if got := tc.call.Matches(tc.pattern); got != tc.want {
			t.Errorf("%+v.Matches(%q) = %v, want %v", tc.call, tc.pattern, got, tc.want)
		}
	}
}

func TestOptions(t *testing.T) {
	if got := Options(); !slices.Equal(got, []string{"allow_once", "allow_always", "reject_once", "reject_always"}) {
		t.Errorf("Options() = %v", got)
	}
	for _, o := range Options() {
		if Granted(o) != (o == AllowOnce || o == AllowAlways) || Always(o) != (o == AllowAlways || o == RejectAlways) {
			t.Errorf("option %s: Granted %v Always %v", o, Granted(o), Always(o))
		}
	}
	if _, err := ParseMode("yolo"); err == nil {
		t.Error("ParseMode accepted an unknown mode")
	}
	for _, m := range Modes() {
		if got, err := ParseMode(string(m.ID)); err != nil || got != m.ID {
			t.Errorf("ParseMode(%s) = %v, %v", m.ID, got, err)
		}
	}
}
