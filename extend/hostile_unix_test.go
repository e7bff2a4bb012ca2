//go:build unix

package extend

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
)

func skill(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\nDo " + name + ".\n"
}

// TestFindHostile: a repository's skills and commands folders holding
// links out, a named pipe, a huge file and malformed files are each
// reported and left out, without hanging; the good ones are found.
func TestFindHostile(t *testing.T) {
	proj, outside, user := t.TempDir(), t.TempDir(), t.TempDir()
	testfs.WriteTree(t, outside, map[string]string{
		"secret/SKILL.md": skill("secret", "leaked"),
		"cmd.md":          "leaked",
	})
	testfs.WriteTree(t, proj, map[string]string{
		".agents/skills/good/SKILL.md":        skill("good", "Good one."),
		".agents/skills/good/references/a.md": "ref",
		".agents/skills/bad/SKILL.md":         "---\nname: Bad\ndescription: d\n---\n",
		".agents/skills/huge/SKILL.md":        "---\nname: huge\ndescription: d\n---\n" + strings.Repeat("x", MaxSkillFile),
		".agents/skills/fifo/.keep":           "",
		".agents/skills/README.md":            "not a skill",
		".bridle/commands/review.md":          "---\ndescription: Review it\nargument-hint: a path\n---\nReview $ARGUMENTS now.",
		".bridle/commands/mine.md":            "project's mine",
	})
	testfs.WriteTree(t, user, map[string]string{"commands/mine.md": "user's mine"})
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(proj, ".agents/skills/secret")))
	must(t, os.Symlink(filepath.Join(outside, "cmd.md"), filepath.Join(proj, ".bridle/commands/linked.md")))
	must(t, syscall.Mkfifo(filepath.Join(proj, ".agents/skills/fifo/SKILL.md"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(proj, ".bridle/commands/pipe.md"), 0o644))

	s := Find(Standard(user, "", proj, nil, nil))
	if len(s.Skills) != 1 || s.Skills[0].Name != "good" {
		t.Fatalf("skills = %+v, want only good", s.Skills)
	}
	var names []string
	for _, c := range s.Commands {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "mine,review" {
		t.Fatalf("commands = %v, want mine (the user's), review", names)
	}
	if c, _ := s.Command("mine"); c.Body != "user's mine" {
		t.Errorf("mine = %q, want the user's", c.Body)
	}
	probs := strings.Join(s.Problems, "\n")
	for _, want := range []string{"skills/bad/SKILL.md is not used", "skills/huge is not used", "over the", "skills/fifo is not used", "named pipe", "skills/secret is not used", "commands/linked.md is not used", "commands/pipe.md is not used", "the project's command /mine"} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems lack %q:\n%s", want, probs)
		}
	}
	if strings.Contains(probs+Catalogue(s.Skills), "leaked") {
		t.Errorf("a file outside the project was read:\n%s", probs)
	}
	body, files, err := s.Skills[0].Load()
	if err != nil || body != "Do good." || strings.Join(files, ",") != "references/a.md" {
		t.Errorf("Load = %q, %v, %v", body, files, err)
	}
	if _, err := s.Skills[0].ReadFile("../bad/SKILL.md", 1<<10); err == nil {
		t.Error("ReadFile read out of the skill's folder")
	}
	if got, _ := s.Command("review"); got.Expand("main.go") != "Review main.go now." || got.Hint != "a path" {
		t.Errorf("review = %+v, expands to %q", got, got.Expand("main.go"))
	}
}
