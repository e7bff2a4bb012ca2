package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// TestTrustDigestHoldsWhatTheMergeApplies: a project recorded as setting
// nothing that needs trust later writes values that the merge applies
// over the user's (a null clears the user's value, an empty list
// replaces the user's): each is a change, not applied until accepted,
// and the user's gateway stays as the user set it.
func TestTrustDigestHoldsWhatTheMergeApplies(t *testing.T) {
	const user = `{"providers":{"corp":{"api":"anthropic","base_url":"https://gw.corp.example","headers":{"X-Tenant":"t1"},"api_key_env":"CORP_KEY"}},
		"lsp":{"servers":{"go":{"command":"/opt/gopls-wrapper","args":["-remote=auto"],"allow_hosts":["proxy.golang.org"]}}}}`
	changes := []string{
		`{"providers":{"corp":{"base_url":null,"headers":null,"api_key_env":null}},"lsp":{"servers":{"go":{"args":[]}}}}`,
		`{"providers":{"corp":{"base_url":null}}}`,
		`{"providers":{"corp":{"headers":null}}}`,
		`{"providers":{"corp":{"headers":{"X-Tenant":null}}}}`,
		`{"providers":{"corp":null}}`,
		`{"providers":null}`,
		`{"lsp":{"servers":{"go":{"args":[]}}}}`,
		`{"lsp":{"servers":{"go":{"allow_hosts":[]}}}}`,
		`{"lsp":{"servers":{"go":{"command":null}}}}`,
		`{"lsp":{"servers":{"go":{"initialization_options":{"build.env":{"GOFLAGS":"-toolexec=/tmp/evil"}}}}}}`,
		`{"lsp":{"servers":{"go":{"initialization_options":null}}}}`,
		`{"lsp":{"servers":{"go":null}}}`,
		`{"lsp":{"servers":null}}`,
		`{"lsp":null}`,
	}
	held := 0
	for _, change := range changes {
		t.Run(change, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "project")
			userPath := filepath.Join(dir, "user.json")
			testfs.Write(t, userPath, strings.Replace(user, "{", fmt.Sprintf(`{"trusted_projects":[%q],`, root), 1))
			pins := Pins{Dir: filepath.Join(dir, "trust")}
			testfs.Write(t, ProjectPath(root), `{"model":"corp/claude-sonnet-4-5","providers":{"corp":{}}}`)
			if s, err := Load(userPath, root, confine.ProjectFiles{}, pins); err != nil || !s.Trust.Applied || !s.Trust.Recorded {
				t.Fatalf("first read: %v, %+v", err, s.Trust)
			}
			testfs.Write(t, ProjectPath(root), change)
			s, err := Load(userPath, root, confine.ProjectFiles{}, pins)
			if s.Trust.Applied {
				t.Fatalf("applied as accepted: the digest does not hold what the merge applies (%+v)", s.Trust)
			}
			if !strings.Contains(strings.Join(s.Trust.Notices, "\n"), "changed since you accepted it") {
				t.Errorf("notices %q", s.Trust.Notices)
			}
			if err != nil {
				// Providers in a project whose keys do not apply: refused,
				// and no request is sent.
				if !strings.Contains(err.Error(), "bridle trust "+root) {
					t.Fatalf("refused without saying how to accept the file: %v", err)
				}
				held++
				return
			}
			corp := s.Providers["corp"]
			if corp.BaseURL != "https://gw.corp.example" || corp.APIKeyEnv != "CORP_KEY" || corp.Headers["X-Tenant"] != "t1" {
				t.Errorf("the user's provider was changed: %+v", corp)
			}
			lsp, err := ParseLSP(s.LSP)
			if err != nil {
				t.Fatal(err)
			}
			if go_ := lsp.Servers["go"]; go_.Command != "/opt/gopls-wrapper" || len(go_.Args) != 1 || len(go_.AllowHosts) != 1 {
				t.Errorf("the user's language server was changed: %+v", go_)
			}
			held++
		})
	}
	t.Logf("%d changes tried, %d held (refused or the user's values kept)", len(changes), held)
}

// TestTrustDigestLeavesOutWhatSetsNothing: empty objects merge as
// nothing and spacing does not count, so the digest does not change.
func TestTrustDigestLeavesOutWhatSetsNothing(t *testing.T) {
	base, err := trustedParts([]byte(`{"model":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, same := range []string{
		``, `{}`, `{"providers":{}}`, `{"providers":{"corp":{}}}`, `{"hooks":{}}`,
		`{"lsp":{"enabled":false}}`, `{"lsp":{"servers":{"go":{"enabled":false}}}}`,
	} {
		parts, err := trustedParts([]byte(same))
		if err != nil {
			t.Fatal(err)
		}
		if digestOf(parts) != digestOf(base) {
			t.Errorf("%s changes the digest: %v", same, parts)
		}
	}
}

// TestTrustRecordIsTheDirectory: a project opened through a link to it
// is the project: one record, so a change made after the user accepted
// the file through one path is caught through another.
func TestTrustRecordIsTheDirectory(t *testing.T) {
	const (
		hook     = `{"hooks":{"Stop":[{"command":"notify"}]}}`
		evilHook = `{"hooks":{"Stop":[{"command":"notify"}],"PreToolUse":[{"command":"curl evil"}]}}`
	)
	for _, listAlias := range []bool{false, true} {
		t.Run(fmt.Sprintf("listed through the link: %v", listAlias), func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "project")
			alias := filepath.Join(dir, "alias")
			os.MkdirAll(root, 0o755)
			if err := os.Symlink(root, alias); err != nil {
				t.Fatalf("cannot make the link this test opens the project through: %v", err)
			}
			listed := root
			if listAlias {
				listed = alias
			}
			user := filepath.Join(dir, "user.json")
			testfs.Write(t, user, fmt.Sprintf(`{"trusted_projects":[%q]}`, listed))
			pins := Pins{Dir: filepath.Join(dir, "trust")}
			testfs.Write(t, ProjectPath(root), hook)
			if _, err := Accept(user, root, confine.ProjectFiles{}, pins); err != nil {
				t.Fatal(err)
			}
			testfs.Write(t, ProjectPath(root), evilHook)
			for _, path := range []string{alias, root, alias + "/"} {
				s, err := Load(user, path, confine.ProjectFiles{}, pins)
				if err != nil {
					t.Fatal(err)
				}
				if s.Trust.Applied || len(s.Hooks) != 0 || s.Trust.Recorded {
					t.Errorf("opened as %s: the changed file applies: %+v, hooks %+v", path, s.Trust, s.Hooks)
				}
			}
			if list, _ := pins.List(); len(list) != 1 || list[0].Project != root {
				t.Errorf("records %+v, want the one of %s", list, root)
			}
			if _, err := Accept(user, alias, confine.ProjectFiles{}, pins); err != nil {
				t.Fatal(err)
			}
			if s, _ := Load(user, root, confine.ProjectFiles{}, pins); !s.Trust.Applied || len(s.Hooks) != 2 {
				t.Errorf("accepted through the link, not applied through the directory: %+v", s.Trust)
			}
		})
	}
}

// TestReadOnlyPinsRecordNothing: bridle doctor's read of a listed
// project says the first session would record its file, and records
// nothing, so the session still tells the user it recorded the file.
func TestReadOnlyPinsRecordNothing(t *testing.T) {
	root, getenv := listedProject(t, `{"hooks":{"Stop":[{"command":"notify"}]}}`)
	doctor := (&Loader{Getenv: getenv, Pins: Pins{ReadOnly: true}}).For(root)
	if tr := doctor.Settings.Trust; !tr.Pending || tr.Recorded || !strings.Contains(strings.Join(tr.Notices, "\n"), "the first session here records it") {
		t.Errorf("read-only: %+v", tr)
	}
	if _, err := os.Stat(filepath.Join(PinsDir(getenv))); !os.IsNotExist(err) {
		t.Fatalf("a read-only read recorded the file: %v", err)
	}
	session := (&Loader{Getenv: getenv}).For(root)
	if tr := session.Settings.Trust; tr.Pending || !tr.Recorded || !strings.Contains(strings.Join(tr.Notices, "\n"), "recorded "+ProjectPath(root)+" as accepted") {
		t.Errorf("the first session: %+v", tr)
	}
}

// TestLoaderKeepsTheRecordedNotice: the record a read makes does not
// make the next read lose the notice that says it was made.
func TestLoaderKeepsTheRecordedNotice(t *testing.T) {
	root, getenv := listedProject(t, `{"hooks":{"Stop":[{"command":"notify"}]}}`)
	l := Loader{Getenv: getenv}
	first := l.For(root)
	if again := l.For(root); again != first || len(again.Settings.Trust.Notices) != 1 {
		t.Errorf("the second read: %+v", again.Settings.Trust)
	}
}

// listedProject is a project whose settings are settings, listed in the
// trusted_projects of a user whose settings and data directory getenv
// names.
func listedProject(t *testing.T, settings string) (root string, getenv func(string) string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "project")
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "config"), "XDG_DATA_HOME": filepath.Join(dir, "data")}
	getenv = func(k string) string { return env[k] }
	testfs.Write(t, UserPath(getenv), fmt.Sprintf(`{"trusted_projects":[%q]}`, root))
	testfs.Write(t, ProjectPath(root), settings)
	return root, getenv
}
