package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// These tests attack the records of trust (trust_pin_test.go): a record
// damaged, a value the digest left out, a path to the project that is
// not the one the user accepted it through; and check what the user is
// told, in each session, and that bridle doctor accepts nothing.

// trustProject is a workspace the user lists in trusted_projects, under
// a fresh $HOME whose data directory keeps the records; env is the
// environment for the CLI.
func trustProject(t *testing.T, settings string) (ws, home string, env []string) {
	t.Helper()
	ws = acptest.Workspace(t, map[string]string{"README.md": "# app\n", ".bridle/settings.json": settings})
	home = t.TempDir()
	writeSettings(t, home, fmt.Sprintf(`{"trusted_projects": [%q]}`, ws))
	env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"BRIDLE_DB=" + filepath.Join(t.TempDir(), "cli.db")}
	return ws, home, env
}

// trustRecords are the record files in home's data directory.
func trustRecords(t *testing.T, home string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(home, ".local", "share", "bridle", "trust", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

const (
	stopHook  = `{"hooks": {"Stop": [{"command": "echo stop >> stop-hook-ran.txt"}]}}`
	addedHook = `{"hooks": {"Stop": [{"command": "echo stop >> stop-hook-ran.txt"}], "PreToolUse": [{"command": "echo pwned > marker.txt"}]}}`
	readOnce  = `{"turns": [{"calls": [{"tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]}, {"text": "read"}]}]}`
)

// TestTrustUnreadableRecordWithholdsTheChange: the file changes and its
// record is damaged (half written, or written over); the next session is
// not a first read: the added hook does not run, the user is told the
// record could not be read and how to accept the file, and the record
// is left for bridle trust to replace.
func TestTrustUnreadableRecordWithholdsTheChange(t *testing.T) {
	for _, damage := range []string{"{half a rec", "", `{"project":"/elsewhere","digest":"sha256:00","accepted":"2020-01-01T00:00:00Z"}`} {
		t.Run(fmt.Sprintf("%q", damage), func(t *testing.T) {
			ws, home, env := trustProject(t, stopHook)
			a, _ := sessionIn(t, acptest.Options{Home: home, Model: acptest.Scenario(t, readOnce)}, ws, "", "read")
			a.CloseStdin()
			a.WaitExit()
			records := trustRecords(t, home)
			if len(records) != 1 {
				t.Fatalf("the first session made %d records, want 1", len(records))
			}
			if err := os.WriteFile(filepath.Join(ws, ".bridle", "settings.json"), []byte(addedHook), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(records[0], []byte(damage), 0o600); err != nil {
				t.Fatal(err)
			}

			b, sid := sessionIn(t, acptest.Options{Home: home, Model: acptest.Scenario(t, readOnce)}, ws, "", "read")
			if _, err := os.Stat(filepath.Join(ws, "marker.txt")); err == nil {
				t.Fatalf("the hook added next to a damaged record ran: the record counted as none and the changed file was accepted")
			}
			told := agentText(b, sid)
			for _, want := range []string{"could not be read", "hooks.PreToolUse", "bridle trust " + ws} {
				if !strings.Contains(told, want) {
					t.Errorf("the user is not told %q; the agent said:\n%s", want, told)
				}
			}
			if got, _ := os.ReadFile(records[0]); string(got) != damage {
				t.Errorf("the damaged record was replaced by %q", got)
			}
			b.CloseStdin()
			b.WaitExit()

			if out := trustCLI(t, env, ws); !strings.Contains(out, "could not be read") || !strings.Contains(out, `hooks.PreToolUse[0].command = "echo pwned > marker.txt"`) {
				t.Errorf("bridle trust:\n%s", out)
			}
			sessionIn(t, acptest.Options{Home: home, Model: acptest.Scenario(t, readOnce)}, ws, "", "read")
			if _, err := os.Stat(filepath.Join(ws, "marker.txt")); err != nil {
				t.Errorf("the hook accepted by bridle trust did not run: %v", err)
			}
		})
	}
}

// TestTrustNullClearingTheGatewayIsAChange: the user's provider goes
// through the company's gateway with a tenant header; the trusted
// project's file, recorded as choosing only the model, later sets the
// header to null, which the merge applies (clearing the user's). That is
// a change: the prompt is refused, and the gateway hears nothing.
func TestTrustNullClearingTheGatewayIsAChange(t *testing.T) {
	gateway := providertest.NewServer(t, providertest.Reply{Body: recorded(t, "anthropic/text.sse")}, providertest.Reply{Body: recorded(t, "anthropic/text.sse")})
	const model = `"model":"corp/claude-sonnet-4-5"`
	ws := acptest.Workspace(t, map[string]string{".bridle/settings.json": "{" + model + "}"})
	config, _ := userSettings(t, fmt.Sprintf(`{"trusted_projects":[%q],"providers":{"corp":{"api":"anthropic","base_url":%q,"api_key_env":"CORP_KEY","headers":{"X-Tenant":"t1"}}}}`, ws, gateway.URL))
	env := isolated(t, config, "CORP_KEY=corp-key")

	a, _ := sessionIn(t, acptest.Options{Env: env}, ws, "", "hello")
	if reqs := gateway.Requests(); len(reqs) != 1 || reqs[0].Header.Get("X-Tenant") != "t1" {
		t.Fatalf("the gateway got %d requests (%v), want 1 with the user's header", len(reqs), reqs)
	}
	a.CloseStdin()
	a.WaitExit()

	if err := os.WriteFile(filepath.Join(ws, ".bridle", "settings.json"), []byte(`{`+model+`,"providers":{"corp":{"headers":null}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, sid := sessionIn(t, acptest.Options{Env: env}, ws, "")
	_, rerr := c.Call("session/prompt", acptest.PromptParams(sid, "hello"))
	if reqs := gateway.Requests(); len(reqs) != 1 {
		t.Fatalf("the gateway got a request without the user's header (%v): a null the digest left out cleared it", reqs[len(reqs)-1].Header)
	}
	if rerr == nil || rerr.Code != -32000 || !strings.Contains(rerr.Message, "providers.corp.headers") || !strings.Contains(rerr.Message, "bridle trust "+ws) {
		t.Fatalf("prompt answered %v, want -32000 naming the key and how to accept the file", rerr)
	}
	if told := agentText(c, sid); !strings.Contains(told, "changed since you accepted it") {
		t.Errorf("the user is not told the file changed; the agent said:\n%s", told)
	}
}

// TestTrustThroughALinkIsTheDirectory: the user accepts the project; its
// file then gains a hook; a session opened through a link to the
// project is in the same project, with the same record: the hook does
// not run.
func TestTrustThroughALinkIsTheDirectory(t *testing.T) {
	ws, home, env := trustProject(t, stopHook)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(ws, alias); err != nil {
		t.Fatalf("cannot make the link to the project this test opens it through: %v", err)
	}
	trustCLI(t, env, ws)
	if err := os.WriteFile(filepath.Join(ws, ".bridle", "settings.json"), []byte(addedHook), 0o644); err != nil {
		t.Fatal(err)
	}
	a, sid := sessionIn(t, acptest.Options{Home: home, Model: acptest.Scenario(t, readOnce)}, alias, "", "read")
	if _, err := os.Stat(filepath.Join(ws, "marker.txt")); err == nil {
		t.Fatalf("the hook added after the accept ran in a session opened through a link to the project")
	}
	for _, r := range hookRuns(t, a.DB, sid) {
		if r["whose"] == "project" && r["event"] == "PreToolUse" {
			t.Errorf("the hook added after the accept ran in a session opened through a link to the project: %v", r)
		}
	}
	if told := agentText(a, sid); !strings.Contains(told, "changed since you accepted it") || !strings.Contains(told, "bridle trust "+ws) {
		t.Errorf("the user is not told the file changed; the agent said:\n%s", told)
	}
	if n := len(trustRecords(t, home)); n != 1 {
		t.Errorf("%d records, want the project's one", n)
	}
}

// TestTrustFirstReadIsTold: the first session in a listed project
// records its file as it is then, and says so, naming what it sets.
func TestTrustFirstReadIsTold(t *testing.T) {
	ws, home, _ := trustProject(t, addedHook)
	a, sid := sessionIn(t, acptest.Options{Home: home, Model: acptest.Scenario(t, readOnce)}, ws, "", "read")
	told := agentText(a, sid)
	for _, want := range []string{"recorded " + filepath.Join(ws, ".bridle", "settings.json") + " as accepted", "whatever changed it before", "hooks.PreToolUse", "hooks.Stop", "bridle trust --list"} {
		if strings.Count(told, want) != 1 {
			t.Errorf("the user is not told once %q; the agent said:\n%s", want, told)
		}
	}
}

// TestDoctorAcceptsNothing: bridle doctor in a listed project with no
// record says the first session would record its file, and records
// nothing: the first session still does, and says so.
func TestDoctorAcceptsNothing(t *testing.T) {
	ws, home, env := trustProject(t, addedHook)
	doctor, errs, err := runCLIIn(t, ws, env, "doctor")
	if err != nil {
		t.Fatalf("bridle doctor: %v\n%s%s", err, doctor, errs)
	}
	if !strings.Contains(doctor, "would be recorded as accepted") || !strings.Contains(doctor, "hooks.PreToolUse") {
		t.Errorf("bridle doctor does not say the first session would record the file:\n%s", doctor)
	}
	if records := trustRecords(t, home); len(records) != 0 {
		t.Fatalf("bridle doctor recorded the project's file as accepted: %v", records)
	}
	if list := trustCLI(t, env, "--list"); !strings.Contains(list, "no project's settings accepted yet") {
		t.Errorf("bridle trust --list after bridle doctor:\n%s", list)
	}
	a, sid := sessionIn(t, acptest.Options{Home: home, Model: acptest.Scenario(t, readOnce)}, ws, "", "read")
	if told := agentText(a, sid); !strings.Contains(told, "recorded "+filepath.Join(ws, ".bridle", "settings.json")+" as accepted") {
		t.Errorf("the first session after bridle doctor does not say it recorded the file; the agent said:\n%s", told)
	}
}

// TestTrustNoticeInEverySession: two sessions in one bridle, in the same
// project whose file changed since it was accepted: each is told.
func TestTrustNoticeInEverySession(t *testing.T) {
	ws, home, env := trustProject(t, stopHook)
	trustCLI(t, env, ws)
	if err := os.WriteFile(filepath.Join(ws, ".bridle", "settings.json"), []byte(addedHook), 0o644); err != nil {
		t.Fatal(err)
	}
	a := acptest.Start(t, acptest.Options{Home: home, Model: acptest.Scenario(t, `{"turns": [{"calls": [{"text": "one"}]}, {"calls": [{"text": "two"}]}]}`)})
	a.Initialize()
	for i := range 2 {
		sid := a.NewSession(ws)
		if stop := a.Prompt(sid, "hello"); stop != "end_turn" {
			t.Fatalf("session %d: the prompt ended %q", i, stop)
		}
		if told := agentText(a, sid); strings.Count(told, "changed since you accepted it") != 1 {
			t.Errorf("session %d is not told once that the file changed; the agent said:\n%s", i, told)
		}
	}
}
