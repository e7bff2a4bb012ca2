package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bridle-dev/bridle/extend"
	"github.com/bridle-dev/bridle/permission"
)

// Skill loads one of the session's skills (package extend): its
// SKILL.md's instructions, or a file beside it. A session offers it only
// when it has skills; the catalogue of their names and descriptions is
// in the fixed prefix of every request. It reads; it runs nothing.
type Skill struct {
	declared[Skill]
	Skills []extend.Skill
}

// NewSkill is the skill tool over skills (nil for none: a session with
// no skill offers no tool). It is a pointer, so that a registry built
// over it is kept while the session's skills do not change.
func NewSkill(skills []extend.Skill) *Skill {
	if len(skills) == 0 {
		return nil
	}
	return &Skill{Skills: skills}
}

func (Skill) spec() *toolSpec { return &skillSpec }

var skillSpec = newSpec[skillInput]("skill", KindRead, permission.EffectRead)

type skillInput struct {
	Name string `json:"name" jsonschema:"the skill's name, as the catalogue lists it" check:"minLength=1,maxLength=64"`
	File string `json:"file,omitempty" jsonschema:"a file of the skill's folder to read instead of its instructions, relative to it (references/guide.md)"`
}

// maxSkillFile bounds a file read beside a skill.
const maxSkillFile = 256 << 10

func (t *Skill) find(env *Env, input json.RawMessage) (skillInput, extend.Skill, error) {
	in, err := parseInput[skillInput](env, t.Name(), skillSpec.schema(), input)
	if err != nil {
		return in, extend.Skill{}, err
	}
	for _, s := range t.Skills {
		if s.Name == in.Name {
			return in, s, nil
		}
	}
	names := make([]string, len(t.Skills))
	for i, s := range t.Skills {
		names[i] = s.Name
	}
	return in, extend.Skill{}, fmt.Errorf("skill: no skill is called %q; the skills are: %s", in.Name, strings.Join(names, ", "))
}

func (t *Skill) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, s, err := t.find(env, input)
	if err != nil {
		return Preview{}, err
	}
	if in.File != "" {
		return Preview{Title: "Read " + in.File + " of skill " + s.Name, Locations: []Location{{Path: filepath.Join(s.Dir(), filepath.FromSlash(in.File))}}}, nil
	}
	return Preview{Title: "Load skill " + s.Name, Locations: []Location{{Path: filepath.Join(s.Dir(), extend.SkillFile)}}}, nil
}

func (t *Skill) Run(_ context.Context, env *Env, input json.RawMessage) Result {
	in, s, err := t.find(env, input)
	if err != nil {
		return Errorf("%v", err)
	}
	if in.File != "" {
		data, err := s.ReadFile(in.File, maxSkillFile)
		if err != nil {
			return Errorf("skill %s: %v", s.Name, err)
		}
		return CapOutput(env, Caps{}, string(data))
	}
	body, files, err := s.Load()
	if err != nil {
		return Errorf("skill %s could not be loaded: %v", s.Name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s, the %s's, from %s:\n\n%s\n", s.Name, s.Folder.Whose(), s.Dir(), body)
	if len(files) > 0 {
		fmt.Fprintf(&b, "\nFiles in the skill's folder (read one with this tool's \"file\"; run a script with run_command, from %s):\n", s.Dir())
		for _, f := range files {
			b.WriteString("- " + f + "\n")
		}
	}
	return CapOutput(env, Caps{}, b.String())
}
