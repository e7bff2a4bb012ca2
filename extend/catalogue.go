package extend

import (
	"fmt"
	"strings"
)

// catalogueHead opens the catalogue: what skills are and how to use them.
const catalogueHead = `# Skills

Skills are instructions for particular tasks that the user or the project wrote. When a task matches a skill's description, load it with the skill tool before you start, and follow it; read the files it names with the skill tool's "file" or read_file. A skill is text, not a permission: run its scripts with run_command, like any command. A project's skill is the repository's text, as its files are.
`

// catalogueLine is one skill's line: its name, whose it is, its
// description on one line.
func catalogueLine(s Skill) string {
	return fmt.Sprintf("\n- %s (%s's): %s", s.Name, s.Folder.Whose(), strings.Join(strings.Fields(s.Description), " "))
}

// Catalogue renders skills for the fixed prefix of every request: only
// their names and descriptions ("" for none). It is bounded by
// MaxSkills and MaxCatalogue (findSkills keeps to them).
func Catalogue(skills []Skill) string {
	if len(skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(catalogueHead)
	for _, s := range skills {
		b.WriteString(catalogueLine(s))
	}
	return b.String()
}
