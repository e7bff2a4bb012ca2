package extend

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Places are the folders a session's skills and commands are read from,
// the user's first (the earlier folder wins a name).
type Places struct {
	Skills, Commands []Folder
	// Reserved are the command names bridle keeps for its own commands.
	Reserved []string
}

// The project's folders, relative to the session's directory.
var (
	ProjectSkills   = []string{filepath.Join(".bridle", "skills"), filepath.Join(".agents", "skills")}
	ProjectCommands = []string{filepath.Join(".bridle", "commands"), filepath.Join(".agents", "commands")}
)

// Standard returns the places of a session in the directory project
// ("" for none): the user's (configDir/skills, home/.agents/skills,
// configDir/commands; either directory may be "") and then the
// project's, read with the session's hidden paths. A project folder that
// is one of the user's (a session in the home directory) is the user's.
func Standard(configDir, home, project string, hidden, own []string) Places {
	var p Places
	user := func(list *[]Folder, dirs ...string) {
		for _, d := range dirs {
			if d != "" && filepath.IsAbs(d) {
				*list = append(*list, Folder{Root: filepath.Clean(d), Path: "."})
			}
		}
	}
	join := func(dir string, elem ...string) string {
		if dir == "" {
			return ""
		}
		return filepath.Join(append([]string{dir}, elem...)...)
	}
	user(&p.Skills, join(configDir, "skills"), join(home, ".agents", "skills"))
	user(&p.Commands, join(configDir, "commands"))
	proj := func(list *[]Folder, rels []string) {
		if project == "" {
			return
		}
		for _, rel := range rels {
			f := Folder{Root: project, Path: rel, Project: true, Hidden: hidden, Own: own}
			mine := false
			for _, u := range *list {
				mine = mine || u.Show() == f.Show()
			}
			if !mine {
				*list = append(*list, f)
			}
		}
	}
	proj(&p.Skills, ProjectSkills)
	proj(&p.Commands, ProjectCommands)
	return p
}

// Set is what a session's places hold.
type Set struct {
	Skills   []Skill
	Commands []Command
	// Problems say, one sentence each, which skills and commands were not
	// used and why (a malformed front matter, a link out of the project,
	// a name the user's folder has too). None is fatal.
	Problems []string
}

// Find reads the skills and commands of p. It never fails: what cannot
// be used is a Problem.
func Find(p Places) Set {
	var s Set
	var probs []string
	s.Skills, s.Problems = findSkills(p.Skills)
	s.Commands, probs = findCommands(p.Commands, p.Reserved)
	s.Problems = append(s.Problems, probs...)
	return s
}

// Skill returns the skill called name.
func (s Set) Skill(name string) (Skill, bool) {
	for _, sk := range s.Skills {
		if sk.Name == name {
			return sk, true
		}
	}
	return Skill{}, false
}

// Command returns the command called name.
func (s Set) Command(name string) (Command, bool) {
	for _, c := range s.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// Describe lists the set for the user (/skills, bridle doctor): each
// skill and command, whose it is and where, then what was not used and
// why.
func (s Set) Describe() string {
	var b strings.Builder
	if len(s.Skills) == 0 {
		b.WriteString("No skills. bridle reads them from ~/.config/bridle/skills, ~/.agents/skills, and the project's .bridle/skills and .agents/skills: a folder per skill, with a SKILL.md.\n")
	} else {
		b.WriteString("Skills (the model sees their names and descriptions, and loads one with the skill tool):\n")
		for _, sk := range s.Skills {
			fmt.Fprintf(&b, "- %s — the %s's, %s: %s\n", sk.Name, sk.Folder.Whose(), sk.Dir(), strings.Join(strings.Fields(sk.Description), " "))
		}
	}
	if len(s.Commands) > 0 {
		b.WriteString("\nPrompt commands:\n")
		for _, c := range s.Commands {
			fmt.Fprintf(&b, "- /%s — the %s's, %s\n", c.Name, c.Folder.Whose(), c.File)
		}
	}
	if len(s.Problems) > 0 {
		b.WriteString("\nNot used:\n")
		for _, p := range s.Problems {
			b.WriteString("- " + p + "\n")
		}
	}
	return b.String()
}
