package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/bridle-dev/bridle/permission"
)

// ListDir lists one directory of the workspace.
type ListDir struct {
	declared[ListDir]
	// MaxEntries caps one call; the result says how to list on.
	MaxEntries int
}

func (ListDir) spec() *toolSpec { return &listDirSpec }

var listDirSpec = newSpec[listDirInput]("list_dir", KindRead, permission.EffectRead)

type listDirInput struct {
	Path   string `json:"path,omitempty" jsonschema:"directory, relative to the workspace or absolute inside it (default: the workspace)"`
	Offset int    `json:"offset,omitempty" jsonschema:"first entry to show, 1-based" check:"minimum=1"`
}

func (t ListDir) Description() string {
	return listDirSpec.doc.render(struct{ Max int }{t.max()})
}

func (t ListDir) max() int { return orDefault(t.MaxEntries, 500) }

func (t ListDir) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[listDirInput](env, t.Name(), listDirSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	p := orDot(in.Path)
	return Preview{Title: "List " + p, Locations: []Location{{Path: env.Root.Abs(p)}}}, nil
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func (t ListDir) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[listDirInput](env, t.Name(), listDirSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	p := orDot(in.Path)
	ents, err := env.Root.ReadDir(p)
	if err != nil {
		return Errorf("list_dir: %v", err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	first := max(in.Offset, 1)
	var b strings.Builder
	shown := 0
	for i := first - 1; i < len(ents) && shown < t.max(); i++ {
		e := ents[i]
		switch {
		case e.IsDir():
			fmt.Fprintf(&b, "%s/\n", e.Name())
		case e.Type()&fs.ModeSymlink != 0:
			target := "?"
			if tgt, err := env.Root.Readlink(joinRel(p, e.Name())); err == nil {
				target = tgt
			}
			fmt.Fprintf(&b, "%s -> %s\n", e.Name(), target)
		default:
			size := ""
			if fi, err := e.Info(); err == nil {
				size = fmt.Sprintf("  (%d bytes)", fi.Size())
			}
			fmt.Fprintf(&b, "%s%s\n", e.Name(), size)
		}
		shown++
	}
	switch {
	case len(ents) == 0:
		b.WriteString("[empty directory]\n")
	case first > len(ents):
		return Errorf("list_dir: %s has %d entries; offset %d is past the end", p, len(ents), first)
	case first-1+shown < len(ents):
		fmt.Fprintf(&b, "[entries %d-%d of %d shown; list on with offset %d]\n", first, first-1+shown, len(ents), first+shown)
	}
	return Result{Output: env.redact(b.String()), Locations: []Location{{Path: env.Root.Abs(p)}}, Lines: len(ents)}
}

func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}
