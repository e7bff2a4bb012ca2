package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agents16KB is an AGENTS.md of 16 KB, written like one.
func agents16KB() string {
	var b strings.Builder
	b.WriteString("# Working in this repository\n\n")
	for i := 0; b.Len() < 16<<10; i++ {
		fmt.Fprintf(&b, "- Rule %d: run `go test ./pkg/mod%d/...` before committing; keep functions under 40 lines and name errors ErrThing%d.\n", i, i, i)
	}
	return b.String()[:16<<10]
}

// BenchmarkProjectInstructions16KB measures the project-instructions step
// of one model call (what session.Config.Project returns) for a
// directory with a 16 KB AGENTS.md, a user's and a project's settings
// file and a .env file, none of them changing between calls.
func BenchmarkProjectInstructions16KB(b *testing.B) {
	dir, home := b.TempDir(), b.TempDir()
	for path, content := range map[string]string{
		filepath.Join(dir, ".git", "HEAD"):             "ref: refs/heads/main\n",
		filepath.Join(dir, "AGENTS.md"):                agents16KB(),
		filepath.Join(dir, ".env"):                     "DB_PASSWORD=correct-horse-battery\n",
		filepath.Join(dir, ".bridle", "settings.json"): `{"instructions":"Answer briefly."}`,
		filepath.Join(home, "bridle", "settings.json"): `{"model":"scripted/demo"}`,
	} {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	m := &Models{Getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return home
		}
		return ""
	}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if !strings.Contains(m.ProjectInstructions(dir), "Rule 1:") {
		b.Fatal("no instructions")
	}
	b.ReportAllocs()
	for b.Loop() {
		m.ProjectInstructions(dir)
	}
}
