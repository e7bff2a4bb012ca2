//go:build unix

package confine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/workspace"
)

// TestProjectFilesRead: a file a repository provides for bridle is read
// only if the file tools would read it: a link within the directory is
// followed, one leading out of it (as the file or as a directory on the
// way), to a hidden path, to a .env file, or a file with another hard
// link is not.
func TestProjectFilesRead(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	repo := filepath.Join(home, "repo") // the directory read from
	testfs.WriteTree(t, home, map[string]string{
		".netrc":                        "machine x password NETRC-SECRET\n",
		".pgpass":                       "db:5432:*:u:PGPASS-SECRET\n",
		".ssh/config":                   "Host x\n  IdentityFile SSH-SECRET\n",
		".local/share/bridle/bridle.db": "DB-SECRET",
		"repo/docs/agents.md":           "shared rules\n",
		"repo/.ssh/config":              "REPO-SSH-SECRET\n",
		"repo/.env":                     "SETTING=DOTENV-SECRET\n",
		"repo/svc/.env.production":      "SETTING=DOTENV-PROD-SECRET\n",
		"repo/.env.example":             "SETTING=changeme\n",
	})
	files := ProjectFiles{
		Hidden: []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".netrc"), filepath.Join(repo, ".ssh")},
		Own:    []string{filepath.Join(home, ".local", "share", "bridle")},
	}
	link := func(target, name string) {
		t.Helper()
		p := filepath.Join(repo, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.Symlink(target, p))
	}
	link("docs/agents.md", "inside.md")
	link(filepath.Join(home, ".netrc"), "netrc.md")
	link("../.netrc", "dotdot.md")
	link(filepath.Join(home, ".ssh", "config"), "sshconfig.md")
	link("/proc/self/environ", "environ.md")
	link(filepath.Join(home, ".local", "share", "bridle", "bridle.db"), "db.md")
	link(filepath.Join(home, ".ssh"), "sshdir")
	link(".ssh/config", "hidden-inside.md")
	// A hard link to a file no list hides: only its link count tells.
	must(t, os.Link(filepath.Join(home, ".pgpass"), filepath.Join(repo, "hard.md")))
	must(t, syscall.Mkfifo(filepath.Join(repo, "fifo.md"), 0o644))
	// The .env files each user fills in: a link to one, however reached.
	link(".env", "dotenv.md")
	link("svc/.env.production", "dotenv-deep.md")
	link("dotenv.md", "dotenv-chain.md")
	link("svc", "svcdir")
	link(".env.example", "example.md")

	tests := []struct {
		name string
		want string // the content; "" when it must be refused
		says string // what the refusal says
	}{
		{"docs/agents.md", "shared rules\n", ""},
		{"inside.md", "shared rules\n", ""},
		{"netrc.md", "", "outside"},
		{"dotdot.md", "", "outside"},
		{"sshconfig.md", "", "outside"},
		{"environ.md", "", "outside"},
		{"db.md", "", "outside"},
		{"sshdir/config", "", "outside"},
		{"hidden-inside.md", "", "hidden"},
		{".ssh/config", "", "hidden"},
		{"hard.md", "", "hard links"},
		{"fifo.md", "", "named pipe"},
		{"../.pgpass", "", "outside"},
		{"dotenv.md", "", "a link to the .env file"},
		{"dotenv-deep.md", "", "a link to the .env file"},
		{"dotenv-chain.md", "", "a link to the .env file"},
		{"svcdir/.env.production", "", "a link to the .env file"},
		{".env.example", "SETTING=changeme\n", ""},
		{"example.md", "SETTING=changeme\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := files.Read(repo, tt.name)
			if tt.want != "" {
				if err != nil || string(got) != tt.want {
					t.Fatalf("Read = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("read %q; want it refused", got)
			}
			if errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q (or says the file does not exist)", err, tt.says)
			}
			if strings.Contains(tt.says, ".env") && !errors.Is(err, workspace.ErrDotEnv) {
				t.Errorf("error %q is not workspace.ErrDotEnv", err)
			}
		})
	}
	if _, err := files.Read(repo, "missing.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	// The session's directory at home itself: the link stays inside, the
	// hidden list is what refuses it.
	must(t, os.Symlink(".ssh/config", filepath.Join(home, "AGENTS.md")))
	if got, err := files.Read(home, "AGENTS.md"); err == nil || !errors.Is(err, ErrHiddenPath) {
		t.Errorf("AGENTS.md -> .ssh/config at home: %q, %v; want a hidden-path refusal", got, err)
	}
	must(t, os.Symlink(".local/share/bridle/bridle.db", filepath.Join(home, "db.md")))
	if got, err := files.Read(home, "db.md"); err == nil || !errors.Is(err, ErrHiddenPath) {
		t.Errorf("a link to bridle's database at home: %q, %v; want a hidden-path refusal", got, err)
	}
}
