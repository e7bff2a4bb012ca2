package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/extend"
	"github.com/bridle-dev/bridle/internal/testfs"
)

func TestSkillTool(t *testing.T) {
	user := t.TempDir()
	testfs.WriteTree(t, user, map[string]string{
		"skills/notes/SKILL.md":    "---\nname: notes\ndescription: Keeps notes.\n---\nWrite notes to NOTES.md.\n",
		"skills/notes/guide.md":    "the guide",
		"skills/notes/ref/deep.md": "deep",
		"skills/other/SKILL.md":    "---\nname: other\ndescription: Other.\n---\nOTHER-BODY\n",
	})
	set := extend.Find(extend.Standard(user, "", "", nil, nil))
	tool := NewSkill(set.Skills)
	if NewSkill(nil) != nil {
		t.Error("a session without skills has a skill tool")
	}
	env := testEnv(t)
	for _, tc := range []struct {
		input, want string
		isErr       bool
	}{
		{`{"name":"notes"}`, "Write notes to NOTES.md.", false},
		{`{"name":"notes"}`, "- guide.md\n- ref/deep.md\n", false},
		{`{"name":"notes","file":"guide.md"}`, "the guide", false},
		{`{"name":"notes","file":"../other/SKILL.md"}`, "not a path inside the skill's folder", true},
		{`{"name":"notes","file":"/etc/passwd"}`, "not a path inside the skill's folder", true},
		{`{"name":"nope"}`, "the skills are: notes, other", true},
		{`{"name":""}`, "name", true},
	} {
		r := tool.Run(context.Background(), env, json.RawMessage(tc.input))
		if r.IsError != tc.isErr || !strings.Contains(r.Output, tc.want) {
			t.Errorf("%s: %+v, want %q (error %v)", tc.input, r, tc.want, tc.isErr)
		}
	}
	p, err := tool.Preview(context.Background(), env, json.RawMessage(`{"name":"notes"}`))
	if err != nil || p.Title != "Load skill notes" || p.Locations[0].Path != filepath.Join(user, "skills/notes/SKILL.md") {
		t.Errorf("preview = %+v, %v", p, err)
	}
}
