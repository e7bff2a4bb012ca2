package extend

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// MaxCommandFile bounds a prompt command's file; MaxCommands bounds the
// commands of a session.
const (
	MaxCommandFile = 64 << 10
	MaxCommands    = 100
)

// Arguments is what a command's text says where the user's words go.
const Arguments = "$ARGUMENTS"

// Command is a prompt command: a Markdown file whose text (with the
// user's words for $ARGUMENTS) becomes the prompt.
type Command struct {
	// Name is the file's name without ".md": the command is /Name.
	Name string
	// Description and Hint are the front matter's description and
	// argument-hint, which the editor shows.
	Description, Hint string
	// Body is the text after the front matter.
	Body string
	// Folder is the folder it was found in; File is its path, absolute.
	Folder Folder
	File   string
}

// commandFront is a command file's optional front matter.
type commandFront struct {
	Description  string `yaml:"description"`
	ArgumentHint string `yaml:"argument-hint"`
}

// Expand returns the command's prompt: its text with the user's words
// (args) for every $ARGUMENTS, or after it when it has none.
func (c Command) Expand(args string) string {
	body := strings.TrimSpace(c.Body)
	if strings.Contains(body, Arguments) {
		return strings.ReplaceAll(body, Arguments, args)
	}
	if args == "" {
		return body
	}
	return body + "\n\n" + args
}

// checkCommandName checks a command's name (its file's, without .md):
// 1 to 64 letters, digits, hyphens and underscores, a letter or digit
// first. An editor shows and the user types it after "/".
func checkCommandName(name string) error {
	if name == "" || len(name) > MaxName {
		return fmt.Errorf("the name %q must be 1 to %d characters", name, MaxName)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '_')
		if !ok {
			return fmt.Errorf("the name %q has %q: only letters a-z, digits, and (not first) hyphens and underscores", name, c)
		}
	}
	return nil
}

// findCommands reads the commands of folders, in order: a name found
// again later is reported and left out (the user's folders come first:
// a project's command never replaces the user's), and so is one of the
// reserved names (bridle's own commands).
func findCommands(folders []Folder, reserved []string) (cmds []Command, problems []string) {
	byName := map[string]Command{}
	for _, fo := range folders {
		found, probs := fo.commands()
		problems = append(problems, probs...)
		for _, c := range found {
			switch prev, ok := byName[c.Name]; {
			case slices.ContainsFunc(reserved, func(r string) bool { return strings.EqualFold(r, c.Name) }):
				// Any case: "/Rewind" beside bridle's "/rewind" would pose as it.
				problems = append(problems, fmt.Sprintf("the %s's command /%s (%s) is not used: /%s is bridle's own", fo.Whose(), c.Name, c.File, c.Name))
			case ok:
				problems = append(problems, fmt.Sprintf("the %s's command /%s (%s) is not used: the %s's command of that name (%s) is", fo.Whose(), c.Name, c.File, prev.Folder.Whose(), prev.File))
			case len(cmds) >= MaxCommands:
				problems = append(problems, fmt.Sprintf("the %s's command /%s (%s) is left out: a session offers at most %d commands", fo.Whose(), c.Name, c.File, MaxCommands))
			default:
				byName[c.Name] = c
				cmds = append(cmds, c)
			}
		}
	}
	return cmds, problems
}

// commands reads the commands of one folder: its .md files.
func (fo Folder) commands() (cmds []Command, problems []string) {
	r, err := fo.open()
	if err != nil {
		return nil, nil
	}
	defer r.Close()
	ents, err := fo.entries(r)
	if err != nil {
		problems = append(problems, err.Error())
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		rel := filepath.Join(fo.Path, e.Name())
		show := filepath.Join(fo.Root, rel)
		if err := checkCommandName(name); err != nil {
			problems = append(problems, fmt.Sprintf("the %s's command %s is not used: %v", fo.Whose(), show, err))
			continue
		}
		data, err := readFile(r, show, rel, MaxCommandFile)
		if err != nil {
			problems = append(problems, fmt.Sprintf("the %s's command %s is not used: %v", fo.Whose(), show, err))
			continue
		}
		var f commandFront
		body, err := splitFront(data, &f)
		if err != nil && err != errNoFront {
			problems = append(problems, fmt.Sprintf("the %s's command %s is not used: %v", fo.Whose(), show, err))
			continue
		}
		if strings.TrimSpace(body) == "" {
			problems = append(problems, fmt.Sprintf("the %s's command %s is not used: it has no text", fo.Whose(), show))
			continue
		}
		desc := strings.Join(strings.Fields(f.Description), " ")
		if desc == "" {
			desc = fmt.Sprintf("The %s's prompt from %s", fo.Whose(), show)
		}
		cmds = append(cmds, Command{Name: name, Description: desc, Hint: strings.TrimSpace(f.ArgumentHint), Body: body, Folder: fo, File: show})
	}
	return cmds, problems
}
