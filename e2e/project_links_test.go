package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// The files bridle reads for the repository (AGENTS.md in the session's
// directory and in every directory up to the repository's top, its
// .bridle/settings.json, .gitignore, .env) are read through the file
// tools' confinement. These tests make each of them a symbolic link to a
// secret in the user's home and check, through one prompt to a local
// server, that no request carries any of them and that the session works.

// linkMark is a marker in a secret file, assembled at run time so that
// this file never matches a search for it.
func linkMark(name string) string { return strings.ToUpper(name) + "MARK-" + "51c3" }

// plantedHome is a home directory holding the usual secrets, each with
// its marker, and bridle's own settings; bridle's database is made there
// by the agent (DefaultDB).
func plantedHome(t *testing.T) string {
	t.Helper()
	return acptest.Workspace(t, map[string]string{
		".netrc":                       "machine github.com login u password " + linkMark("netrc") + "\n",
		".pgpass":                      "db:5432:*:u:" + linkMark("pgpass") + "\n",
		".ssh/config":                  "Host x\n  IdentityFile " + linkMark("sshconfig") + "\n",
		".aws/credentials":             "[default]\naws_secret_access_key = " + linkMark("aws") + "\n",
		".kube/config":                 "users:\n- user:\n    token: " + linkMark("kube") + "\n",
		".docker/config.json":          `{"auths":{"r.example":{"auth":"` + linkMark("docker") + `"}}}` + "\n",
		".config/gh/hosts.yml":         "github.com:\n  oauth_token: " + linkMark("gh") + "\n",
		".config/bridle/settings.json": `{"instructions":"Answer briefly.","sandbox":{"command":{"env_allow":["` + linkMark("settings") + `"]}}}` + "\n",
	})
}

var plantedMarks = []string{"netrc", "pgpass", "sshconfig", "aws", "kube", "docker", "gh", "settings"}

// chain makes n directories below top, each inside the last, and returns
// them with top first.
func chain(t *testing.T, top string, n int) []string {
	t.Helper()
	dirs := []string{top}
	for i := 1; i <= n; i++ {
		d := filepath.Join(dirs[i-1], "l"+string(rune('a'+i-1)))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// promptWithLinks runs one prompt with the session in cwd, bridle's home
// at home, and checks that the request names none of links as
// instructions, carries no planted marker, and that the turn ends well;
// it returns the links that were read.
func promptWithLinks(t *testing.T, home, cwd string, links []string) (read []string) {
	t.Helper()
	srv := providertest.NewServer(t, providertest.Reply{Body: recorded(t, "anthropic/text.sse")})
	a := acptest.Start(t, acptest.Options{Model: "anthropic/claude-sonnet-4-5", DefaultDB: true, Home: home,
		Env: append(noProviders(), "ANTHROPIC_API_KEY=sk-ant-e2e-links", "ANTHROPIC_BASE_URL="+srv.URL)})
	a.Initialize()
	sid := a.NewSession(cwd)
	if stop := a.Prompt(sid, "hello"); stop != "end_turn" {
		t.Fatalf("stopReason = %q; the session must work with the links skipped; stderr:\n%s", stop, a.Stderr())
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the server got %d requests, want 1", len(reqs))
	}
	var body struct {
		System json.RawMessage `json:"system"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	// The system prompt is a list of text blocks (cache_control marks
	// its stable prefix).
	var system strings.Builder
	var blocks []struct{ Text string }
	if err := json.Unmarshal(body.System, &blocks); err != nil {
		t.Fatalf("the request's system prompt is not a list of blocks: %v", err)
	}
	for _, b := range blocks {
		system.WriteString(b.Text)
	}
	for _, l := range links {
		if strings.Contains(system.String(), "Instructions from "+l) {
			read = append(read, l)
		}
	}
	for _, m := range plantedMarks {
		if strings.Contains(string(reqs[0].Body), linkMark(m)) {
			t.Errorf("the request carries the planted %s secret", m)
		}
	}
	if !strings.Contains(system.String(), "Answer briefly.") {
		t.Errorf("the user's own instructions are missing from the system prompt:\n%s", system.String())
	}
	if len(read) > 0 {
		t.Errorf("%d of %d linked files were read into the system prompt: %s", len(read), len(links), strings.Join(read, ", "))
	}
	stderr := a.Stderr()
	for _, l := range links {
		if !strings.Contains(stderr, l) {
			t.Errorf("the log does not name the skipped %s", l)
		}
	}
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "not read") {
			t.Log(line)
		}
	}
	a.AssertValid(t)
	return read
}

// TestProjectFileLinksLeavingTheRepository: AGENTS.md in the session's
// directory and in each directory up to the repository's top, its
// settings, .gitignore and .env, each a link to a secret of the user's
// outside the repository: none is read, the prompt goes through.
func TestProjectFileLinksLeavingTheRepository(t *testing.T) {
	home := plantedHome(t)
	ws := acptest.Workspace(t, map[string]string{".git/HEAD": "ref: refs/heads/main\n", "README.md": "# readme\n"})
	data := filepath.Join(home, ".local", "share", "bridle")
	targets := []string{
		filepath.Join(home, ".netrc"),
		filepath.Join(home, ".pgpass"),
		filepath.Join(home, ".ssh", "config"),
		filepath.Join(home, ".aws", "credentials"),
		filepath.Join(home, ".kube", "config"),
		filepath.Join(home, ".docker", "config.json"),
		filepath.Join(home, ".config", "gh", "hosts.yml"),
		filepath.Join(home, ".config", "bridle", "settings.json"),
		filepath.Join(data, "bridle.db"),
		filepath.Join(data, "bridle.db-wal"),
		"/proc/self/environ",
	}
	dirs := chain(t, ws, len(targets)-1)
	var links []string
	for i, target := range targets {
		l := filepath.Join(dirs[i], "AGENTS.md")
		symlink(t, target, l)
		links = append(links, l)
	}
	cwd := dirs[len(dirs)-1]
	settings := filepath.Join(cwd, ".bridle", "settings.json")
	symlink(t, filepath.Join(home, ".config", "bridle", "settings.json"), settings)
	symlink(t, filepath.Join(home, ".netrc"), filepath.Join(cwd, ".gitignore"))
	symlink(t, filepath.Join(home, ".aws", "credentials"), filepath.Join(cwd, ".env"))
	read := promptWithLinks(t, home, cwd, append(links, settings))
	t.Logf("%d link targets tried, %d read", len(targets)+1, len(read))
}

// TestProjectFileLinksToHiddenPaths: the home directory is the
// repository (a dotfiles repository), so links from its AGENTS.md files
// to the credential stores and bridle's own files stay inside it: the
// hidden paths, as the file tools have them, refuse them.
func TestProjectFileLinksToHiddenPaths(t *testing.T) {
	home := plantedHome(t)
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	targets := []string{
		".ssh/config", ".aws/credentials", ".kube/config", ".docker/config.json", ".netrc",
		".config/bridle/settings.json", ".local/share/bridle/bridle.db", ".local/share/bridle/bridle.db-wal",
	}
	dirs := chain(t, home, len(targets)-1)
	var links []string
	for i, target := range targets {
		l := filepath.Join(dirs[i], "AGENTS.md")
		rel, err := filepath.Rel(dirs[i], filepath.Join(home, target))
		if err != nil {
			t.Fatal(err)
		}
		symlink(t, rel, l)
		links = append(links, l)
	}
	read := promptWithLinks(t, home, dirs[len(dirs)-1], links)
	t.Logf("%d hidden targets tried, %d read", len(targets), len(read))
}
