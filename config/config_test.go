package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
)

func loaderWith(env map[string]string) *Loader {
	return &Loader{Getenv: func(k string) string { return env[k] }, Environ: func() []string { return nil }}
}

// TestForProjectOverridesUser: the project's file over the user's, key by
// key, then the environment; a directory without a project file gets the
// user's.
func TestForProjectOverridesUser(t *testing.T) {
	home, proj, other := t.TempDir(), t.TempDir(), t.TempDir()
	testfs.Write(t, filepath.Join(home, "bridle", "settings.json"), `{"model":"ollama/user","context":{"drop":0.6,"compact":0.95},"models":{"ollama/m":{"window":9000,"max_output":900}}}`)
	testfs.Write(t, ProjectPath(proj), `{"model":"ollama/project","context":{"compact":0.8},"models":{"ollama/m":{"window":8000}}}`)
	l := loaderWith(map[string]string{"XDG_CONFIG_HOME": home, "BRIDLE_CONTEXT": `{"low_water":0.4}`})
	c := l.For(proj)
	if c.Err != nil || c.ContextErr != nil {
		t.Fatal(c.Err, c.ContextErr)
	}
	if c.Settings.Model != "ollama/project" {
		t.Errorf("model = %q, want the project's", c.Settings.Model)
	}
	if want := (Context{Drop: 0.6, Compact: 0.8, LowWater: 0.4}); c.Context != want {
		t.Errorf("context = %+v, want %+v", c.Context, want)
	}
	if m, _ := c.Model("ollama/m"); m != (ModelSpec{Window: 8000, MaxOutput: 900}) {
		t.Errorf("models[ollama/m] = %+v, want the project's window and the user's max_output", m)
	}
	if c := l.For(other); c.Settings.Model != "ollama/user" || c.Context.Compact != 0.95 {
		t.Errorf("a directory without settings: model %q, context %+v; want the user's", c.Settings.Model, c.Context)
	}
}

// TestForCachesByFileIdentity: an unchanged directory gets the same
// resolution back; an edit to a settings file or an AGENTS.md (also one of
// the same size and modification time, renamed over it) is read at the
// next call.
func TestForCachesByFileIdentity(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	testfs.Write(t, filepath.Join(proj, ".git", "HEAD"), "ref: refs/heads/main\n")
	testfs.Write(t, filepath.Join(proj, "AGENTS.md"), "Use table tests.\n")
	testfs.Write(t, ProjectPath(proj), `{"model":"ollama/aaa"}`)
	l := loaderWith(map[string]string{"XDG_CONFIG_HOME": home})
	c1 := l.For(proj)
	if c2 := l.For(proj); c2 != c1 {
		t.Fatalf("an unchanged directory was resolved again (version %d, then %d)", c1.Version, c2.Version)
	}
	if !strings.Contains(text(c1), "Use table tests.") {
		t.Fatalf("instructions = %q", text(c1))
	}

	// Same size, same modification time, another inode.
	fi, _ := os.Stat(ProjectPath(proj))
	tmp := filepath.Join(proj, ".bridle", "new.json")
	testfs.Write(t, tmp, `{"model":"ollama/bbb"}`)
	os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
	if err := os.Rename(tmp, ProjectPath(proj)); err != nil {
		t.Fatal(err)
	}
	c3 := l.For(proj)
	if c3 == c1 || c3.Settings.Model != "ollama/bbb" {
		t.Fatalf("after the edit: model %q (same resolution: %v)", c3.Settings.Model, c3 == c1)
	}

	testfs.Write(t, filepath.Join(proj, "AGENTS.md"), "Use property tests.\n")
	if got := text(l.For(proj)); !strings.Contains(got, "Use property tests.") {
		t.Fatalf("after editing AGENTS.md: instructions = %q", got)
	}

	// The user's file counts the same way.
	testfs.Write(t, filepath.Join(home, "bridle", "settings.json"), `{"context":{"reserve":1234}}`)
	time.Sleep(time.Millisecond)
	if c := l.For(proj); c.Context.Reserve != 1234 {
		t.Fatalf("after creating the user's file: context = %+v", c.Context)
	}
}

// TestInstructionsRedactDotEnv: a value of a .env file in the directory
// is redacted from the instructions, also one added after the first call.
func TestInstructionsRedactDotEnv(t *testing.T) {
	proj := t.TempDir()
	testfs.Write(t, filepath.Join(proj, "AGENTS.md"), "Deploy with s3cr3t-deploy-value-123 and other-value-4567890.\n")
	testfs.Write(t, filepath.Join(proj, ".env"), "DEPLOY=s3cr3t-deploy-value-123\n")
	l := loaderWith(nil)
	got := text(l.For(proj))
	if strings.Contains(got, "s3cr3t-deploy-value-123") || !strings.Contains(got, "other-value-4567890") {
		t.Fatalf("instructions = %q", got)
	}
	testfs.Write(t, filepath.Join(proj, ".env.local"), "OTHER=other-value-4567890\n")
	if got := text(l.For(proj)); strings.Contains(got, "other-value-4567890") {
		t.Fatalf("a new .env file's value was not redacted: %q", got)
	}
}

// text is a configuration's instructions.
func text(c *Config) string {
	t, _ := c.Instructions()
	return t
}
