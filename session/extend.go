package session

import (
	"context"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/extend"
	"github.com/bridle-dev/bridle/tools"
)

// extensions are the skills and prompt commands of a session's
// directory (package extend): read when the session opens and again at
// each prompt, so that a folder edited meanwhile applies from the next
// prompt, while the request's prefix stays the same within a turn.
type extensions struct {
	mu  sync.Mutex
	set extend.Set
	// tool is the skill tool over set's skills (nil without any), kept
	// while they do not change so the registry and the prefix hold.
	tool      *tools.Skill
	catalogue string
	// told holds the settings' notices told in this session: each
	// session that opens in a directory is told what its user must know,
	// once.
	told sync.Map
}

// BuiltinCommands are bridle's own commands (Manager.Commands): a
// prompt command cannot take one of their names.
var BuiltinCommands = []string{"constraint", "decision", "fork", "rewind", "skills"}

// readExtensions reads the session's skills and commands again; it says
// whether the commands the editor should offer changed. Each problem
// (a malformed skill, a project command the user's shadows) is told
// once per process, as a notice.
func (s *Session) readExtensions() (commandsChanged bool) {
	info := s.Info()
	if s.m.cfg.Extensions == nil || info.ParentID != "" {
		return false
	}
	places := s.m.cfg.Extensions(info.Cwd)
	places.Reserved = BuiltinCommands
	set := extend.Find(places)
	s.ext.mu.Lock()
	old := s.ext.set
	if !sameSkills(old.Skills, set.Skills) {
		s.ext.tool = tools.NewSkill(set.Skills)
		s.ext.catalogue = extend.Catalogue(set.Skills)
	}
	s.ext.set = set
	s.ext.mu.Unlock()
	for _, p := range set.Problems {
		if _, told := s.m.told.LoadOrStore(p, true); !told {
			s.notice(p)
		}
	}
	return !sameCommands(old.Commands, set.Commands)
}

// tellSettings tells the user, once per session each, what the settings
// of the session's directory say they must know (Config.Notices): a
// second session in the same directory is told too, since its user may
// not have seen the first's chat.
func (s *Session) tellSettings() {
	if s.m.cfg.Notices == nil {
		return
	}
	for _, n := range s.m.cfg.Notices(s.Info().Cwd) {
		if _, told := s.ext.told.LoadOrStore(n, true); !told {
			s.notice(n)
		}
	}
}

func sameSkills(a, b []extend.Skill) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || a[i].Dir() != b[i].Dir() || a[i].Folder.Project != b[i].Folder.Project {
			return false
		}
	}
	return true
}

func sameCommands(a, b []extend.Command) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || a[i].Hint != b[i].Hint {
			return false
		}
	}
	return true
}

// skillTool is the session's skill tool, nil when it has no skill; a
// subagent's is its parent's.
func (s *Session) skillTool() *tools.Skill {
	if s.parent != nil {
		return s.parent.skillTool()
	}
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	return s.ext.tool
}

// catalogue is the skills' catalogue for the request's fixed prefix; a
// subagent's is its parent's.
func (s *Session) catalogue() string {
	if s.parent != nil {
		return s.parent.catalogue()
	}
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	return s.ext.catalogue
}

// Commands lists the slash commands the session offers: bridle's own,
// then the user's and the project's prompt commands.
func (s *Session) Commands() []acp.AvailableCommand {
	out := s.m.Commands()
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	for _, c := range s.ext.set.Commands {
		ac := acp.AvailableCommand{Name: c.Name, Description: c.Description}
		switch {
		case c.Hint != "":
			ac.Input = &acp.AvailableCommandInput{Hint: c.Hint}
		case strings.Contains(c.Body, extend.Arguments):
			ac.Input = &acp.AvailableCommandInput{Hint: "the words for " + extend.Arguments}
		}
		out = append(out, ac)
	}
	return out
}

// announceCommands tells the editor the session's commands changed.
func (s *Session) announceCommands(ctx context.Context) {
	s.send(ctx, acp.SessionUpdate{AvailableCommandsUpdate: &acp.AvailableCommandsUpdate{AvailableCommands: s.Commands()}})
}

// expandCommand replaces a prompt that is "/name words", where name is
// one of the session's prompt commands, by the command's text with the
// words; use says which command it was (nil: content is unchanged).
func (s *Session) expandCommand(content []event.Content) ([]event.Content, *event.CommandUse) {
	name, arg, ok := slashCommand(content)
	if !ok || s.parent != nil {
		return content, nil
	}
	s.ext.mu.Lock()
	c, found := s.ext.set.Command(strings.TrimPrefix(name, "/"))
	s.ext.mu.Unlock()
	if !found {
		return content, nil
	}
	return []event.Content{{Type: "text", Text: c.Expand(arg)}},
		&event.CommandUse{Name: c.Name, Arguments: arg, Whose: c.Folder.Whose(), File: c.File}
}

// skillsText answers /skills: the session's skills and commands, whose
// each is, and what was not used and why.
func (s *Session) skillsText() string {
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	return s.ext.set.Describe()
}
