package extend

import (
	"fmt"

	"github.com/bridle-dev/bridle/sandbox/confine"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// The bounds the Agent Skills specification sets (agentskills.io), and
// bridle's own on what a folder can make it read and show the model.
const (
	// MaxName and MaxDescription are the specification's, in characters.
	MaxName          = 64
	MaxDescription   = 1024
	maxCompatibility = 500
	// MaxSkillFile bounds a SKILL.md: the specification advises a body
	// under 5,000 tokens; a larger file is refused, not cut.
	MaxSkillFile = 128 << 10
	// MaxSkills and MaxCatalogue bound the catalogue in the fixed prefix
	// of every request: at most this many skills and bytes (about a
	// quarter as many tokens). The skills past either are left out and
	// reported.
	MaxSkills    = 64
	MaxCatalogue = 8 << 10
)

// SkillFile is the file that makes a folder a skill.
const SkillFile = "SKILL.md"

// Skill is a skill found in a folder: its front matter's name and
// description, and where it is.
type Skill struct {
	Name, Description string
	// Folder is the folder the skill was found in.
	Folder Folder
	// rel is the skill's own folder, relative to Folder.Root.
	rel string
}

// Dir is the skill's folder, absolute.
func (s Skill) Dir() string { return filepath.Join(s.Folder.Root, s.rel) }

// skillFront is a SKILL.md's front matter. The optional fields are read
// so that their bounds are checked; allowed-tools, experimental in the
// specification, is ignored: a skill grants nothing.
type skillFront struct {
	Name          string            `yaml:"name"`
	Description   string            `yaml:"description"`
	License       string            `yaml:"license"`
	Compatibility string            `yaml:"compatibility"`
	Metadata      map[string]string `yaml:"metadata"`
	AllowedTools  string            `yaml:"allowed-tools"`
}

// CheckName checks a skill's name as the specification states it: 1 to
// 64 characters, lowercase letters, digits and hyphens, no hyphen first,
// last or twice in a row. bridle takes ASCII letters only: a name is
// typed and read, and look-alike letters would let one skill pass for
// another.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the name is empty")
	case len(name) > MaxName:
		return fmt.Errorf("the name %q is %d characters, over %d", name, len(name), MaxName)
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		return fmt.Errorf("the name %q starts or ends with a hyphen", name)
	case strings.Contains(name, "--"):
		return fmt.Errorf("the name %q has two hyphens in a row", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("the name %q has %q: only lowercase letters a-z, digits and hyphens", name, c)
		}
	}
	return nil
}

// parseSkill reads a SKILL.md found in the folder dirName and checks its
// front matter; it returns the body.
func parseSkill(data []byte, dirName string) (skillFront, string, error) {
	var f skillFront
	body, err := splitFront(data, &f)
	if err != nil {
		return f, "", err
	}
	f.Description = strings.TrimSpace(f.Description)
	if err := CheckName(f.Name); err != nil {
		return f, "", err
	}
	switch n := utf8.RuneCountInString(f.Description); {
	case f.Name != dirName:
		return f, "", fmt.Errorf("the name %q is not its folder's name %q", f.Name, dirName)
	case n == 0:
		return f, "", fmt.Errorf("the description is empty: say what the skill does and when to use it")
	case n > MaxDescription:
		return f, "", fmt.Errorf("the description is %d characters, over %d", n, MaxDescription)
	case utf8.RuneCountInString(f.Compatibility) > maxCompatibility:
		return f, "", fmt.Errorf("the compatibility field is over %d characters", maxCompatibility)
	}
	return f, body, nil
}

// findSkills reads the skills of folders, in order: a name found again
// later is reported and left out, so the earlier folder wins.
func findSkills(folders []Folder) (skills []Skill, problems []string) {
	byName := map[string]Skill{}
	size := len(catalogueHead)
	for _, fo := range folders {
		found, probs := fo.skills()
		problems = append(problems, probs...)
		for _, s := range found {
			if prev, ok := byName[s.Name]; ok {
				problems = append(problems, fmt.Sprintf("the %s's skill %q in %s is not used: the %s's skill of that name in %s is", fo.Whose(), s.Name, s.Dir(), prev.Folder.Whose(), prev.Dir()))
				continue
			}
			line := len(catalogueLine(s))
			if len(skills) >= MaxSkills || size+line > MaxCatalogue {
				problems = append(problems, fmt.Sprintf("the skill %q in %s is left out: the catalogue holds at most %d skills and %d bytes", s.Name, s.Dir(), MaxSkills, MaxCatalogue))
				continue
			}
			size += line
			byName[s.Name] = s
			skills = append(skills, s)
		}
	}
	return skills, problems
}

// skills reads the skills of one folder: each of its folders that holds
// a SKILL.md.
func (fo Folder) skills() (skills []Skill, problems []string) {
	r, err := fo.open()
	if err != nil {
		return nil, nil // no such directory: nothing to find
	}
	defer r.Close()
	ents, err := fo.entries(r)
	if err != nil {
		problems = append(problems, err.Error())
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			continue // a file beside the skills (a README)
		}
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		rel := filepath.Join(fo.Path, e.Name())
		show := filepath.Join(fo.Root, rel, SkillFile)
		data, err := readFile(r, show, filepath.Join(rel, SkillFile), MaxSkillFile)
		if err != nil {
			problems = append(problems, fmt.Sprintf("the %s's skill %s is not used: %v", fo.Whose(), filepath.Join(fo.Root, rel), err))
			continue
		}
		f, _, err := parseSkill(data, e.Name())
		if err != nil {
			problems = append(problems, fmt.Sprintf("the %s's skill %s is not used: %v", fo.Whose(), show, err))
			continue
		}
		skills = append(skills, Skill{Name: f.Name, Description: f.Description, Folder: fo, rel: rel})
	}
	return skills, problems
}

// Load reads the skill's SKILL.md again, as it found it (a link swapped
// in since is refused the same way), and returns its body and the files
// beside it (at most maxFiles, relative to the skill's folder).
func (s Skill) Load() (body string, files []string, err error) {
	r, err := s.Folder.open()
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	show := filepath.Join(s.Dir(), SkillFile)
	data, err := readFile(r, show, filepath.Join(s.rel, SkillFile), MaxSkillFile)
	if err != nil {
		return "", nil, err
	}
	if _, body, err = parseSkill(data, filepath.Base(s.rel)); err != nil {
		return "", nil, fmt.Errorf("%s: %w", show, err)
	}
	s.list(r, ".", 0, &files)
	return strings.TrimSpace(body), files, nil
}

// maxFiles and maxDepth bound the files Load lists.
const (
	maxFiles = 100
	maxDepth = 3
)

// list appends the files below dir (relative to the skill's folder) to
// files, through r: hidden paths are left out, as list_dir leaves them.
func (s Skill) list(r *confine.Root, dir string, depth int, files *[]string) {
	ents, err := r.ReadDir(filepath.Join(s.rel, dir))
	if err != nil {
		return
	}
	for _, e := range ents {
		if len(*files) >= maxFiles {
			return
		}
		name := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir() && depth+1 < maxDepth:
			s.list(r, name, depth+1, files)
		case e.Type().IsRegular() && name != SkillFile:
			*files = append(*files, filepath.ToSlash(name))
		}
	}
}

// ReadFile reads name, a path relative to the skill's folder that stays
// inside it, the way Load reads SKILL.md, up to max bytes.
func (s Skill) ReadFile(name string, max int64) ([]byte, error) {
	clean := filepath.FromSlash(name)
	if !filepath.IsLocal(clean) {
		return nil, fmt.Errorf("%q is not a path inside the skill's folder %s: name a file relative to it, such as references/guide.md", name, s.Dir())
	}
	r, err := s.Folder.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readFile(r, filepath.Join(s.Dir(), clean), filepath.Join(s.rel, clean), max)
}
