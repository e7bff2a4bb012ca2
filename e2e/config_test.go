package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// The settings that apply to a session are those of its directory, not of
// the directory bridle was started in (an editor starts it anywhere): each
// project's .bridle/settings.json sets its models' windows ("models") and
// its thresholds ("context", here the answer's reserve), and an edit to it
// applies from the next model call.

// windowOf returns what a session learns of its window: the size of each
// usage_update from the n-th on, and what a prompt too big for the window
// is told (the window, the budget and the reserve).
func windowOf(t *testing.T, a *acptest.Agent, sid string, from int) (sizes []float64, refusal string) {
	t.Helper()
	for i, u := range a.Updates(sid) {
		if u.Kind == "usage_update" && i >= from {
			sizes = append(sizes, u.Fields["size"].(float64))
		}
	}
	_, rerr := a.Call("session/prompt", acptest.PromptParams(sid, strings.Repeat("too big ", 80_000)))
	if rerr == nil || rerr.Code != -32602 {
		t.Errorf("a 640 KB prompt was answered %v, want -32602: the window is larger than the project's", rerr)
		return sizes, ""
	}
	return sizes, rerr.Message
}

func projectSettings(window, reserve string) string {
	return `{"models":{"scripted/demo":{"window":` + window + `,"max_output":2000}},"context":{"reserve":` + reserve + `}}`
}

func TestSettingsApplyPerSessionDirectory(t *testing.T) {
	a1 := acptest.Workspace(t, map[string]string{".bridle/settings.json": projectSettings("50000", "3000"), "README.md": "# a\n"})
	b1 := acptest.Workspace(t, map[string]string{".bridle/settings.json": projectSettings("70000", "5000"), "README.md": "# b\n"})
	config, _ := userSettings(t, `{}`)
	// bridle runs in the repository (acptest.Root), whose settings are
	// neither project's.
	a := acptest.Start(t, acptest.Options{Model: "scripted/demo", Env: isolated(t, config)})
	a.Initialize()
	sa, sb := a.NewSession(a1), a.NewSession(b1)
	for _, sid := range []string{sa, sb} {
		if stop := a.Prompt(sid, "What is this project?"); stop != "end_turn" {
			t.Fatalf("stopReason = %q", stop)
		}
	}
	for _, tt := range []struct {
		sid, window, reserve string
		size                 float64
	}{
		{sa, "50,000", "3,000", 50_000},
		{sb, "70,000", "5,000", 70_000},
	} {
		sizes, refusal := windowOf(t, a, tt.sid, 0)
		if len(sizes) == 0 {
			t.Fatalf("no usage_update")
		}
		for _, s := range sizes {
			if s != tt.size {
				t.Errorf("usage_update size = %v, want the project's window %v", s, tt.size)
			}
		}
		if want := "scripted/demo's " + tt.window + "-token window"; !strings.Contains(refusal, want) {
			t.Errorf("the refusal does not say %q: %s", want, refusal)
		}
		if want := "(" + tt.reserve + " are kept for the answer"; !strings.Contains(refusal, want) {
			t.Errorf("the refusal does not say %q (the project's reserve): %s", want, refusal)
		}
	}

	// An edit to the project's settings mid-session applies at the next
	// call, without a restart.
	if err := os.WriteFile(filepath.Join(a1, ".bridle", "settings.json"), []byte(projectSettings("40000", "4000")), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := len(a.Updates(sa))
	if stop := a.Prompt(sa, "Thanks!"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	sizes, refusal := windowOf(t, a, sa, seen)
	if len(sizes) == 0 {
		t.Fatalf("no usage_update after the edit")
	}
	for _, s := range sizes {
		if s != 40_000 {
			t.Errorf("after the edit: usage_update size = %v, want 40000", s)
		}
	}
	for _, want := range []string{"40,000-token window", "(4,000 are kept for the answer"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("after the edit, the refusal does not say %q: %s", want, refusal)
		}
	}
	a.AssertValid(t)
}
