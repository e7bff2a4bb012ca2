package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// Markers of the hidden files' contents, assembled at run time so that
// this file's own text never matches a search for them.
var (
	dbMarker       = "DBMARK" + "-5e1c"
	artifactMarker = "ARTMARK" + "-5e1c"
	settingsMarker = "SETMARK" + "-5e1c"
	sshMarker      = "SSHMARK" + "-5e1c"
	hiddenMarkers  = []string{dbMarker, artifactMarker, settingsMarker, sshMarker}
	visibleMarker  = "VISMARK" + "-5e1c"
)

// hiddenWorkspace is a workspace (as at $HOME) holding bridle's data
// directory (a database and another session's artifact), its settings
// and a credential store, all hidden, besides an ordinary file; and
// symbolic links inside the workspace leading into the hidden ones.
type hiddenWorkspace struct {
	env                    *Env
	ws                     string
	data, config, ssh      string
	db, artifact, settings string
	key                    string
}

func newHiddenWorkspace(t *testing.T) *hiddenWorkspace {
	t.Helper()
	return newHiddenWorkspaceIn(t, testEnv(t))
}

func newHiddenWorkspaceIn(t *testing.T, env *Env) *hiddenWorkspace {
	t.Helper()
	ws := env.Root.Dir()
	h := &hiddenWorkspace{env: env, ws: ws,
		data:   filepath.Join(ws, ".local", "share", "bridle"),
		config: filepath.Join(ws, ".config", "bridle"),
		ssh:    filepath.Join(ws, ".ssh"),
	}
	h.db = filepath.Join(h.data, "bridle.db")
	h.artifact = filepath.Join(h.data, "artifacts", "other-session", "a3.0.txt")
	h.settings = filepath.Join(h.config, "settings.json")
	h.key = filepath.Join(h.ssh, "id_ed25519")
	testfs.Write(t, h.db, "SQLite format 3 "+dbMarker+"\n")
	testfs.Write(t, h.db+"-wal", dbMarker+"\n")
	testfs.Write(t, h.artifact, "output of another session: "+artifactMarker+"\n")
	testfs.Write(t, h.settings, `{"sandbox": {"command": {"env_allow": ["`+settingsMarker+`"]}}}`+"\n")
	testfs.Write(t, h.key, sshMarker+"\n")
	testfs.Write(t, filepath.Join(ws, "notes.txt"), "ordinary file: "+visibleMarker+"\n")
	testfs.Write(t, filepath.Join(ws, "src", "main.go"), "package main // "+visibleMarker+"\n")
	for link, target := range map[string]string{
		"link-data":     ".local/share/bridle",
		"link-db":       ".local/share/bridle/bridle.db",
		"link-settings": ".config/bridle/settings.json",
		"link-config":   ".config",
		"link-ssh":      ".ssh",
		"src/up-data":   "../.local/share/bridle",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	env.Root.Hide(h.data, h.config, h.ssh,
		filepath.Join(ws, ".netrc"), filepath.Join(ws, ".aws"), filepath.Join(ws, ".config", "gcloud"))
	return h
}

// snapshot returns every file below dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			if fi.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				out[p] = string(b)
			} else {
				out[p] = fi.Mode().Type().String()
			}
		}
		return nil
	})
	return out
}

// unchanged fails the test if anything hidden changed since before.
func (h *hiddenWorkspace) unchanged(t *testing.T, before map[string]string) {
	t.Helper()
	after := h.hiddenState(t)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: %q, was %q", p, after[p], v)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared", p)
		}
	}
}

func (h *hiddenWorkspace) hiddenState(t *testing.T) map[string]string {
	t.Helper()
	state := map[string]string{}
	for _, d := range []string{h.data, h.config, h.ssh, filepath.Join(h.ws, ".netrc"), filepath.Join(h.ws, ".aws"), filepath.Join(h.ws, ".config", "gcloud")} {
		for p, v := range snapshot(t, d) {
			state[p] = v
		}
	}
	return state
}

func leaks(out string) string {
	for _, m := range hiddenMarkers {
		if strings.Contains(out, m) {
			return m
		}
	}
	return ""
}

// TestHiddenPathsRefused tries every file tool on bridle's own files and
// a credential store, through relative, absolute and ".." paths and
// through symbolic links inside the workspace: each must be refused with
// the error saying the path is hidden, none may show a hidden content,
// and nothing hidden may change or appear.
func TestHiddenPathsRefused(t *testing.T) {
	h := newHiddenWorkspace(t)
	before := h.hiddenState(t)
	files := map[string]string{
		"db relative":              ".local/share/bridle/bridle.db",
		"db absolute":              h.db,
		"db dot-dot":               "src/../.local/share/bridle/bridle.db",
		"db dot-dot absolute":      h.ws + "/src/../.local/share/bridle/bridle.db",
		"wal":                      ".local/share/bridle/bridle.db-wal",
		"artifact":                 ".local/share/bridle/artifacts/other-session/a3.0.txt",
		"db via dir link":          "link-data/bridle.db",
		"db via nested dir link":   "src/up-data/bridle.db",
		"db via file link":         "link-db",
		"artifact via dir link":    "link-data/artifacts/other-session/a3.0.txt",
		"settings relative":        ".config/bridle/settings.json",
		"settings absolute":        h.settings,
		"settings via file link":   "link-settings",
		"settings via parent link": "link-config/bridle/settings.json",
		"ssh key":                  ".ssh/id_ed25519",
		"ssh key via dir link":     "link-ssh/id_ed25519",
		"ssh key absolute":         h.key,
	}
	dirs := map[string]string{
		"data dir":             ".local/share/bridle",
		"data dir absolute":    h.data,
		"data dir trailing /":  ".local/share/bridle/",
		"data dir via link":    "link-data",
		"artifacts dir":        ".local/share/bridle/artifacts",
		"artifacts via link":   "link-data/artifacts/other-session",
		"config dir":           ".config/bridle",
		"config dir via link":  "link-config/bridle",
		"ssh dir":              ".ssh",
		"ssh dir via link":     "link-ssh",
		"ssh dir dot-dot":      "src/../.ssh",
		"data dir nested link": "src/up-data",
	}
	type use struct{ tool, input string }
	for name, p := range files {
		q, _ := json.Marshal(p)
		for _, u := range []use{
			{"read_file", fmt.Sprintf(`{"path": %s}`, q)},
			{"write_file", fmt.Sprintf(`{"path": %s, "content": "PWNED"}`, q)},
			{"edit_file", fmt.Sprintf(`{"path": %s, "old_string": "MARK", "new_string": "PWNED"}`, q)},
			{"grep", fmt.Sprintf(`{"pattern": "MARK", "path": %s}`, q)},
		} {
			t.Run(name+"/"+u.tool, func(t *testing.T) { h.refused(t, u.tool, u.input, p) })
		}
	}
	for name, p := range dirs {
		q, _ := json.Marshal(p)
		for _, u := range []use{
			{"list_dir", fmt.Sprintf(`{"path": %s}`, q)},
			{"grep", fmt.Sprintf(`{"pattern": "MARK", "path": %s}`, q)},
			{"glob", fmt.Sprintf(`{"pattern": "**", "path": %s}`, q)},
			{"write_file", fmt.Sprintf(`{"path": %s, "content": "PWNED"}`, strings.TrimSuffix(string(q), `"`)+`/new.txt"`)},
		} {
			t.Run(name+"/"+u.tool, func(t *testing.T) { h.refused(t, u.tool, u.input, p) })
		}
	}
	// Hidden paths that do not exist yet may not be created, nor any
	// directory on the way to them.
	for name, p := range map[string]string{
		"netrc":             ".netrc",
		"netrc absolute":    filepath.Join(h.ws, ".netrc"),
		"aws credentials":   ".aws/credentials",
		"gcloud":            ".config/gcloud/credentials.db",
		"gcloud via link":   "link-config/gcloud/credentials.db",
		"gcloud deep":       ".config/gcloud/a/b/c.json",
		"new in config dir": ".config/bridle/other.json",
		"new artifact":      "link-data/artifacts/mine/a1.0.txt",
	} {
		q, _ := json.Marshal(p)
		t.Run(name+"/write_file", func(t *testing.T) {
			h.refused(t, "write_file", fmt.Sprintf(`{"path": %s, "content": "PWNED"}`, q), p)
		})
	}
	h.unchanged(t, before)
}

func (h *hiddenWorkspace) refused(t *testing.T, tool, input, p string) {
	t.Helper()
	res := call(t, byName(tool), h.env, input)
	if m := leaks(res.Output); m != "" {
		t.Fatalf("%s showed the hidden %s: %q", tool, m, res.Output)
	}
	if !res.IsError {
		t.Fatalf("not refused: %q", res.Output)
	}
	if !strings.Contains(res.Output, "hidden from the agent") {
		t.Fatalf("refused, but not because the path is hidden: %q", res.Output)
	}
	if !strings.Contains(res.Output, strings.TrimSuffix(p, "/")) {
		t.Fatalf("error does not name the path %s: %q", p, res.Output)
	}
	// The write that was refused left no temporary file behind.
	for _, d := range []string{h.ws, filepath.Join(h.ws, "src")} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".bridle-") {
				t.Fatalf("temporary file left: %s", e.Name())
			}
		}
	}
}

// TestHiddenPathsWalks searches and lists the whole workspace: the hidden
// files are neither searched nor named, and the rest is found as usual.
func TestHiddenPathsWalks(t *testing.T) {
	h := newHiddenWorkspace(t)
	grep := call(t, byName("grep"), h.env, `{"pattern": "MARK-5e1c"}`)
	if grep.IsError || !strings.Contains(grep.Output, "notes.txt:1:") || !strings.Contains(grep.Output, "src/main.go:1:") {
		t.Fatalf("grep: %q", grep.Output)
	}
	files := call(t, byName("grep"), h.env, `{"pattern": ".", "files_only": true}`)
	glob := call(t, byName("glob"), h.env, `{"pattern": "**"}`)
	globDB := call(t, byName("glob"), h.env, `{"pattern": "**/*.db*"}`)
	if !strings.Contains(globDB.Output, "no files match") {
		t.Errorf("glob **/*.db*: %q", globDB.Output)
	}
	for name, res := range map[string]Result{"grep": grep, "grep files_only": files, "glob": glob} {
		if res.IsError {
			t.Errorf("%s: %q", name, res.Output)
		}
		if m := leaks(res.Output); m != "" {
			t.Errorf("%s showed the hidden %s: %q", name, m, res.Output)
		}
		for _, n := range []string{"bridle.db", "a3.0.txt", "settings.json", "id_ed25519", "other-session"} {
			if strings.Contains(res.Output, n) {
				t.Errorf("%s names the hidden %s: %q", name, n, res.Output)
			}
		}
	}
	if !strings.Contains(glob.Output, "notes.txt") || !strings.Contains(glob.Output, "src/main.go") {
		t.Errorf("glob lost the ordinary files: %q", glob.Output)
	}
	// Listings of the directories holding hidden ones do not name them.
	for dir, hidden := range map[string]string{".": ".ssh/", ".local/share": "bridle/", ".config": "bridle/", "link-config": "bridle/"} {
		res := call(t, byName("list_dir"), h.env, fmt.Sprintf(`{"path": %q}`, dir))
		if res.IsError {
			t.Errorf("list_dir %s: %q", dir, res.Output)
			continue
		}
		if slices.Contains(strings.Split(res.Output, "\n"), hidden) {
			t.Errorf("list_dir %s names the hidden %s: %q", dir, hidden, res.Output)
		}
	}
	if res := call(t, byName("list_dir"), h.env, `{"path": "."}`); !strings.Contains(res.Output, "notes.txt") || !strings.Contains(res.Output, "src/") {
		t.Errorf("list_dir . lost the ordinary entries: %q", res.Output)
	}
	// The ordinary files stay usable.
	if res := call(t, byName("read_file"), h.env, `{"path": "notes.txt"}`); res.IsError || !strings.Contains(res.Output, visibleMarker) {
		t.Errorf("read_file notes.txt: %q", res.Output)
	}
	if res := call(t, byName("write_file"), h.env, `{"path": ".config/other/x.json", "content": "{}"}`); res.IsError {
		t.Errorf("write_file beside a hidden directory: %q", res.Output)
	}
	if res := call(t, byName("write_file"), h.env, `{"path": ".local/share/bridle-notes/x.txt", "content": "x"}`); res.IsError {
		t.Errorf("write_file to a sibling whose name starts like a hidden one: %q", res.Output)
	}
}

// TestHiddenDirectoryRenamed moves a hidden directory to another name in
// the workspace (as a command could): it stays hidden, since the check
// is on what was opened, not on its name.
func TestHiddenDirectoryRenamed(t *testing.T) {
	h := newHiddenWorkspace(t)
	moved := filepath.Join(h.ws, "moved")
	if err := os.Rename(h.data, moved); err != nil {
		t.Fatal(err)
	}
	// And the directory above bridle's settings directory.
	if err := os.Rename(filepath.Join(h.ws, ".config"), filepath.Join(h.ws, "config2")); err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct{ tool, input, path string }{
		{"read_file", `{"path": "moved/bridle.db"}`, "moved/bridle.db"},
		{"read_file", `{"path": "moved/artifacts/other-session/a3.0.txt"}`, "moved/artifacts"},
		{"list_dir", `{"path": "moved"}`, "moved"},
		{"list_dir", `{"path": "moved/artifacts"}`, "moved/artifacts"},
		{"grep", `{"pattern": "MARK", "path": "moved"}`, "moved"},
		{"glob", `{"pattern": "**", "path": "moved/artifacts"}`, "moved/artifacts"},
		{"write_file", `{"path": "moved/bridle.db", "content": "PWNED"}`, "moved/bridle.db"},
		{"write_file", `{"path": "moved/artifacts/x/y.txt", "content": "PWNED"}`, "moved/artifacts/x/y.txt"},
		{"read_file", `{"path": "config2/bridle/settings.json"}`, "config2/bridle/settings.json"},
		{"write_file", `{"path": "config2/bridle/settings.json", "content": "{}"}`, "config2/bridle/settings.json"},
		{"list_dir", `{"path": "config2/bridle"}`, "config2/bridle"},
	} {
		t.Run(u.tool+" "+u.path, func(t *testing.T) { h.refused(t, u.tool, u.input, u.path) })
	}
	for _, in := range []string{`{"pattern": "MARK"}`, `{"pattern": "MARK", "path": "config2"}`} {
		if res := call(t, byName("grep"), h.env, in); leaks(res.Output) != "" || strings.Contains(res.Output, "bridle.db") {
			t.Errorf("grep %s: %q", in, res.Output)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(moved, "bridle.db")); !strings.Contains(string(b), dbMarker) {
		t.Errorf("the moved database changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, "config2", "bridle", "settings.json")); !strings.Contains(string(b), settingsMarker) {
		t.Errorf("the moved settings changed: %q", b)
	}
}

// TestHiddenSymlinkSwapRace flips a workspace directory between an
// ordinary one and a way into bridle's data directory (a symbolic link
// to it, or the data directory itself renamed into its place) while
// reads, searches and writes go through it: none may see a hidden
// content, and nothing hidden may change.
func TestHiddenSymlinkSwapRace(t *testing.T) {
	for _, how := range []string{"symlink", "rename"} {
		t.Run(how, func(t *testing.T) {
			h := newHiddenWorkspace(t)
			before := h.hiddenState(t)
			d := filepath.Join(h.ws, "d")
			real := filepath.Join(h.ws, "real")
			testfs.Write(t, filepath.Join(d, "bridle.db"), "ordinary\n")
			var stop atomic.Bool
			var swaps atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				for !stop.Load() {
					os.Rename(d, real)
					if how == "symlink" {
						os.Symlink(".local/share/bridle", d)
					} else {
						os.Rename(h.data, d)
					}
					time.Sleep(time.Microsecond)
					if how == "symlink" {
						os.Remove(d)
					} else {
						os.Rename(d, h.data)
					}
					os.Rename(real, d)
					swaps.Add(1)
				}
			})
			inputs := []struct{ tool, input string }{
				{"read_file", `{"path": "d/bridle.db"}`},
				{"read_file", `{"path": "d/artifacts/other-session/a3.0.txt"}`},
				{"grep", `{"pattern": "MARK", "path": "d"}`},
				{"grep", `{"pattern": "MARK"}`},
				{"glob", `{"pattern": "**/a3.0.txt"}`},
				{"list_dir", `{"path": "d/artifacts"}`},
				{"write_file", `{"path": "d/bridle.db", "content": "PWNED\n"}`},
				{"write_file", `{"path": "d/artifacts/new/x.txt", "content": "PWNED\n"}`},
				{"edit_file", `{"path": "d/bridle.db", "old_string": "SQLite", "new_string": "PWNED"}`},
			}
			deadline := time.Now().Add(2 * time.Second)
			n, refused := 0, 0
			var leaked string
			for time.Now().Before(deadline) && leaked == "" {
				for _, in := range inputs {
					res := byName(in.tool).Run(context.Background(), h.env, json.RawMessage(in.input))
					if strings.Contains(res.Output, "hidden from the agent") {
						refused++
					}
					if m := leaks(res.Output); m != "" || (in.tool == "glob" && strings.Contains(res.Output, "other-session/a3.0.txt")) {
						leaked = fmt.Sprintf("%s %s: %q", in.tool, in.input, res.Output)
						break
					}
				}
				n++
			}
			stop.Store(true)
			wg.Wait()
			if leaked != "" {
				t.Fatalf("hidden content seen through the swap: %s", leaked)
			}
			h.unchanged(t, before)
			t.Logf("%d rounds of %d calls during %d swaps, %d refused as hidden", n, len(inputs), swaps.Load(), refused)
			if refused == 0 {
				t.Errorf("no call met the hidden directory: the swap did not race the calls")
			}
		})
	}
}

// TestHiddenMessages checks that a refusal says why: bridle's own files
// can never be made visible, a credential store can (visible_paths), and
// what the user's settings hide is named as such. A workspace inside a
// hidden directory is refused whole.
func TestHiddenMessages(t *testing.T) {
	h := newHiddenWorkspaceAtHome(t)
	h.env.Root.HideOwn(h.data, h.config)
	secrets := filepath.Join(h.ws, "secrets")
	testfs.Write(t, filepath.Join(secrets, "x"), "x\n")
	h.env.Root.Hide(secrets)
	for _, c := range []struct{ path, want string }{
		{".local/share/bridle/bridle.db", "is bridle's own file (" + h.data + ": its settings, database, artifacts or cache), hidden from the agent: no tool may read or write it, and no setting can make bridle's own files visible"},
		{"link-settings", "bridle's own file (" + h.config},
		{".ssh/id_ed25519", "is a credential store (" + h.ssh + "), hidden from the agent: no tool may read or write it; the user's settings sandbox.command.visible_paths can make a credential store visible"},
		{"secrets/x", "is hidden from the agent by the user's settings (sandbox.command.hidden_paths: " + secrets + ")"},
	} {
		res := call(t, byName("read_file"), h.env, fmt.Sprintf(`{"path": %q}`, c.path))
		if !res.IsError || !strings.Contains(res.Output, "read_file: "+c.path+" ") || !strings.Contains(res.Output, c.want) {
			t.Errorf("read_file %s: %q, want %q", c.path, res.Output, c.want)
		}
	}
	if got := h.env.Root.Hidden(); !slices.Contains(got, h.data) || !slices.Contains(got, secrets) || len(got) != 7 {
		t.Errorf("Hidden() = %v", got)
	}

	root, err := confine.OpenRoot(h.ssh)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	root.Hide(h.ssh)
	inside := &Env{Root: root}
	for _, in := range []struct{ tool, input string }{
		{"read_file", `{"path": "id_ed25519"}`},
		{"list_dir", `{}`},
		{"grep", `{"pattern": "."}`},
		{"glob", `{"pattern": "*"}`},
		{"write_file", `{"path": "new", "content": "x"}`},
	} {
		res := call(t, byName(in.tool), inside, in.input)
		if !res.IsError || !strings.Contains(res.Output, "credential store") || leaks(res.Output) != "" {
			t.Errorf("%s in a workspace inside .ssh: %q", in.tool, res.Output)
		}
	}
}

// newHiddenWorkspaceAtHome is newHiddenWorkspace with $HOME at the
// workspace, where the credential stores are.
func newHiddenWorkspaceAtHome(t *testing.T) *hiddenWorkspace {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	root, err := confine.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	h := newHiddenWorkspaceIn(t, &Env{Root: root, Redactor: testEnv(t).Redactor})
	return h
}

// TestHiddenNotProposed checks that an edit of a hidden file is refused
// when it is previewed, before any approval is asked: the user is never
// asked about a write that would be refused whatever the answer.
func TestHiddenNotProposed(t *testing.T) {
	h := newHiddenWorkspace(t)
	for _, in := range []struct{ tool, input string }{
		{"write_file", `{"path": ".config/bridle/settings.json", "content": "{}"}`},
		{"write_file", `{"path": "link-settings", "content": "{}"}`},
		{"write_file", `{"path": "link-config/gcloud/credentials.db", "content": "x"}`},
		{"write_file", `{"path": "link-data/artifacts/mine/a1.0.txt", "content": "x"}`},
		{"edit_file", `{"path": "link-db", "old_string": "SQLite", "new_string": "x"}`},
		{"edit_file", `{"path": ".ssh/id_ed25519", "old_string": "SSH", "new_string": "x"}`},
	} {
		_, err := byName(in.tool).Preview(context.Background(), h.env, json.RawMessage(in.input))
		if err == nil || !strings.Contains(err.Error(), "hidden from the agent") {
			t.Errorf("%s %s previewed: %v", in.tool, in.input, err)
		}
	}
}
