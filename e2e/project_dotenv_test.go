package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestInstructionLinksToDotEnvThroughTheBinary: a repository can commit
// AGENTS.md as a link to a .env file that each user fills in. The .env
// files the session's redactor knows are those below its directory; the
// AGENTS.md files come from every directory up to the repository's top,
// and a link there may lead anywhere in the repository. An instruction
// file that leads to a .env file is not read, wherever that is: the
// model is told it was left out, and the value reaches neither the
// model, nor the log, nor the editor.
func TestInstructionLinksToDotEnvThroughTheBinary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cwd   string            // the session's directory, below the repository's top
		env   string            // the .env file, relative to the top
		links map[string]string // instruction file (relative to the top) -> link target
		note  string            // the instruction file the request says was left out
	}{
		{"the top's AGENTS.md, to the top's .env", "sub", ".env",
			map[string]string{"AGENTS.md": ".env"}, "AGENTS.md"},
		{"the top's AGENTS.md, to a .env beside the session's directory", "sub", "other/.env.local",
			map[string]string{"AGENTS.md": "other/.env.local"}, "AGENTS.md"},
		{"a middle directory's AGENTS.md, to the .env above it", "sub/deep", ".env",
			map[string]string{"sub/AGENTS.md": "../.env"}, "sub/AGENTS.md"},
		{"the top's AGENTS.md, through another link", "sub", "config/.env.production",
			map[string]string{"AGENTS.md": "docs/guide.md", "docs/guide.md": "../config/.env.production"}, "AGENTS.md"},
		{"the session's own AGENTS.md, to its .env", "sub", "sub/.env",
			map[string]string{"sub/AGENTS.md": ".env"}, "sub/AGENTS.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value := fmt.Sprintf("linked-dotenv-%s-Lq93Zt4N", strings.NewReplacer("/", "-", ".", "").Replace(tc.env))
			values := map[string]string{"the value of " + tc.env: value}
			top := acptest.Workspace(t, map[string]string{
				".git/HEAD":             "ref: refs/heads/main\n",
				tc.cwd + "/README.md":   "# app\n",
				tc.env:                  "PLAIN_SETTING=" + value + "\n",
				"sub/deep/notes/now.md": "nothing\n",
			})
			for name, target := range tc.links {
				symlink(t, target, filepath.Join(top, name))
			}
			requests := filepath.Join(t.TempDir(), "requests.jsonl")
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, `{"turns":[{"calls":[{"text":"ok"}]}]}`), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
			a.Initialize()
			sid := a.NewSession(filepath.Join(top, tc.cwd))
			if stop := a.Prompt(sid, "hi"); stop != "end_turn" {
				t.Fatalf("stopReason = %q", stop)
			}
			for _, l := range leaks(t, a, sid, requests, values) {
				t.Errorf("leaked: %s", l)
			}
			sent, err := os.ReadFile(requests)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(top, tc.note) + " is a link to the .env file"; !strings.Contains(string(sent), want) {
				t.Errorf("the request does not say %s was left out (%q)", tc.note, want)
			}
		})
	}
}
