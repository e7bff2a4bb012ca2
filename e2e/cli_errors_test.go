package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestCLIErrors: every error is said once, in the command line's words
// (no JSON-RPC "invalid params", no "bridle: bridle:"), on stderr, with
// nothing on stdout and a non-zero exit; a run that fails before its
// first prompt leaves no session and no database; reading commands do not
// make the database. The stderr of each case is a golden file
// (testdata/errors/NAME.txt, temporary paths and session ids replaced).
func TestCLIErrors(t *testing.T) {
	ok := acptest.Scenario(t, `{"name":"ok","turns":[{"calls":[{"text":"Fine."}]}]}`)
	auth := acptest.Scenario(t, `{"name":"auth","turns":[{"calls":[{"fail":{"after_chunks":0,"kind":"auth","status":401,"message":"the key was refused"}}]}]}`)
	cases := []struct {
		name     string
		settings string // the user's settings.json, if any
		args     []string
		code     int
		noDB     bool // the database must not be made
	}{
		{"unknown mode", "", []string{"run", "--model", ok, "--mode", "yolo", "hi"}, 2, true},
		{"unknown provider", "", []string{"run", "--model", "nope/x", "hi"}, 2, true},
		{"provider without api", `{"providers":{"local":{"base_url":"http://127.0.0.1:9/v1"}}}`, []string{"run", "--model", "local/x", "hi"}, 2, true},
		{"settings not valid", `{"providers": `, []string{"run", "--model", ok, "hi"}, 2, true},
		{"no prompt", "", []string{"run", "--model", ok}, 2, true},
		{"unknown flag", "", []string{"run", "--model", ok, "--nope", "hi"}, 2, true},
		{"unknown command", "", []string{"frob"}, 2, true},
		{"provider failure", "", []string{"run", "--model", auth, "hi"}, 1, false},
		{"sessions of no database", "", []string{"sessions", "--json"}, 0, true},
		{"log of no database", "", []string{"log", "ses_nope"}, 2, true},
		{"rewind in no database", "", []string{"rewind", "ses_nope", "1"}, 2, true},
		{"log without a session", "", []string{"log"}, 2, true},
		{"doctor with an argument", "", []string{"doctor", "extra"}, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			cfg := filepath.Join(tmp, "config")
			if c.settings != "" {
				os.MkdirAll(filepath.Join(cfg, "bridle"), 0o755)
				os.WriteFile(filepath.Join(cfg, "bridle", "settings.json"), []byte(c.settings), 0o644)
			}
			db := filepath.Join(tmp, "bridle.db")
			cmd := exec.Command(acptest.Binary(t), append(c.args, "--db", db)...)
			cmd.Dir = acptest.Workspace(t, nil)
			cmd.Env = append(cmd.Environ(), "XDG_CONFIG_HOME="+cfg, "XDG_DATA_HOME="+filepath.Join(tmp, "data"), "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"))
			var out, errs strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errs
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			stderr := errs.String()
			if code != 0 {
				if strings.Contains(out.String(), "error") {
					t.Errorf("the error is on stdout too:\n%s", out.String())
				}
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				last := lines[len(lines)-1]
				if !strings.HasPrefix(last, "bridle: ") || strings.HasPrefix(last, "bridle: bridle:") || strings.Contains(stderr, "invalid params") {
					t.Errorf("the error is not said in the command line's words:\n%s", stderr)
				}
				for _, l := range lines[:len(lines)-1] {
					if strings.Contains(l, strings.TrimPrefix(last, "bridle: ")) {
						t.Errorf("the error is said twice:\n%s", stderr)
					}
				}
			}
			if _, err := os.Stat(db); c.noDB && err == nil {
				t.Errorf("the database was made")
			}
			if !c.noDB {
				if n := len(sessionsOf(t, db)); n != 1 {
					t.Errorf("%d sessions, want the one that ran", n)
				}
			}
			golden(t, filepath.Join("errors", strings.ReplaceAll(c.name, " ", "_")+".txt"), normalize(strings.NewReplacer(ok, "scripted/SCENARIO", auth, "scripted/SCENARIO").Replace(stderr), tmp, cmd.Dir))
		})
	}
}

var sessionID = regexp.MustCompile(`ses_[a-z2-7]{26}`)

// normalize replaces what changes from run to run in stderr.
func normalize(s string, dirs ...string) string {
	for _, d := range dirs {
		s = strings.ReplaceAll(s, d, "$TMP")
	}
	return sessionID.ReplaceAllString(s, "ses_ID")
}

// TestCLISettingsWarnedOnce: an unknown key in the user's settings is
// warned about once per run, not once per directory that reads them.
func TestCLISettingsWarnedOnce(t *testing.T) {
	model := acptest.Scenario(t, `{"name":"ok","turns":[{"calls":[{"text":"Fine."}]}]}`)
	env, _ := userSettings(t, `{"bogus": 1}`)
	dir := acptest.Workspace(t, nil)
	_, errs, code := runHeadless(t, []string{env}, "", "run", "--db", filepath.Join(t.TempDir(), "b.db"), "--model", model, "--cwd", dir, "hi")
	if code != 0 || strings.Count(errs, `unknown setting \"bogus\"`) != 1 {
		t.Errorf("exit %d; want the unknown setting warned once:\n%s", code, errs)
	}
}

// TestCLIRewindErrors: rewind's mistakes are said in its words, not as
// JSON-RPC's "invalid params".
func TestCLIRewindErrors(t *testing.T) {
	model := acptest.Scenario(t, `{"name":"ok","turns":[{"calls":[{"text":"Fine."}]}]}`)
	db := filepath.Join(t.TempDir(), "b.db")
	dir := acptest.Workspace(t, nil)
	if _, errs, code := runHeadless(t, nil, "", "run", "--db", db, "--model", model, "--cwd", dir, "hi"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	sid := sessionsOf(t, db)[0].SessionID
	out, errs, code := runHeadless(t, nil, "", "rewind", sid, "5", "--db", db)
	if code != 2 || out != "" || errs != "bridle: /rewind 5: this session has 1 prompts\n" {
		t.Errorf("rewind 5: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := runHeadless(t, nil, "", "log", "ses_nope", "--db", db); code != 2 || strings.Count(errs, "\n") != 1 {
		t.Errorf("log of an unknown session: exit %d, stderr %q", code, errs)
	}
}

// TestCLIRewindYours: a file the user changed after the agent did is
// theirs. `bridle rewind` without a terminal leaves it, says no one
// answered (not "you said leave it") and names the flags; --keep leaves
// it, --overwrite puts it back.
func TestCLIRewindYours(t *testing.T) {
	model := acptest.Scenario(t, `{"name":"w","turns":[{"calls":[{"tool_calls":[{"name":"write_file","input":{"path":"a.txt","content":"agent\n"}}]},{"text":"Wrote it."}]}]}`)
	for _, c := range []struct {
		flag      string
		gone      bool
		stdout    string
		stderrHas string
	}{
		{"", false, "no one answered whether to put it back", "--overwrite puts them back"},
		{"--keep", false, "you said leave it", ""},
		{"--overwrite", true, "", ""},
	} {
		t.Run("flag "+c.flag, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "b.db")
			dir := acptest.Workspace(t, nil)
			if _, errs, code := runHeadless(t, nil, "", "run", "--mode", "auto-edit", "--db", db, "--model", model, "--cwd", dir, "Write a.txt"); code != 0 {
				t.Fatalf("run: exit %d\n%s", code, errs)
			}
			a := filepath.Join(dir, "a.txt")
			if err := os.WriteFile(a, []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"rewind", sessionsOf(t, db)[0].SessionID, "1", "--db", db}
			if c.flag != "" {
				args = append(args, c.flag)
			}
			out, errs, code := runHeadless(t, nil, "", args...)
			if code != 0 {
				t.Fatalf("rewind: exit %d\n%s\n%s", code, out, errs)
			}
			if strings.Contains(out+errs, "bridle run") || strings.Contains(out+errs, "--mode") {
				t.Errorf("rewind names another command's advice:\n%s\n%s", out, errs)
			}
			if !strings.Contains(out, c.stdout) || !strings.Contains(errs, c.stderrHas) {
				t.Errorf("stdout:\n%s\nstderr:\n%s\nwant %q on stdout and %q on stderr", out, errs, c.stdout, c.stderrHas)
			}
			if c.flag == "" && strings.Contains(out, "you said") {
				t.Errorf("no one was asked, yet the rewind says the user answered:\n%s", out)
			}
			_, err := os.Stat(a)
			if gone := os.IsNotExist(err); gone != c.gone {
				t.Errorf("a.txt gone = %v, want %v", gone, c.gone)
			}
		})
	}
}
