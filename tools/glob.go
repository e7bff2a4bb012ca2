package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// Glob finds files by name pattern, skipping what .gitignore ignores.
type Glob struct {
	declared[Glob]
	// MaxResults caps one call; the result says how to see more.
	MaxResults int
}

func (Glob) spec() *toolSpec { return &globSpec }

var globSpec = newSpec[globInput]("glob", KindSearch, permission.EffectRead)

type globInput struct {
	Pattern string `json:"pattern" jsonschema:"glob pattern, matched against paths relative to path" check:"minLength=1"`
	Path    string `json:"path,omitempty" jsonschema:"directory to search (default: the workspace)"`
	Offset  int    `json:"offset,omitempty" jsonschema:"first result to show, 1-based" check:"minimum=1"`
}

func (t Glob) Description() string {
	return globSpec.doc.render(struct{ Max int }{t.max()})
}

func (t Glob) max() int { return orDefault(t.MaxResults, 500) }

func (t Glob) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[globInput](env, t.Name(), globSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	if !doublestar.ValidatePattern(in.Pattern) {
		return Preview{}, fmt.Errorf("glob: %q is not a valid pattern (check the brackets and braces)", in.Pattern)
	}
	return Preview{Title: "Find " + in.Pattern, Locations: []Location{{Path: env.Root.Abs(orDot(in.Path))}}}, nil
}

func (t Glob) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[globInput](env, t.Name(), globSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	if !doublestar.ValidatePattern(in.Pattern) {
		return Errorf("glob: %q is not a valid pattern (check the brackets and braces)", in.Pattern)
	}
	pattern := strings.TrimPrefix(in.Pattern, "./")
	dir := orDot(in.Path)
	var found []string
	tree, err := env.Root.OpenTree(dir)
	if err != nil {
		return Errorf("glob: %v", err)
	}
	defer tree.Close()
	err = tree.Walk(ctx, func(f confine.File) error {
		rel := f.Rel
		if ok, _ := doublestar.Match(pattern, rel); ok {
			found = append(found, rel)
		} else if !strings.Contains(pattern, "/") {
			// A pattern without a slash matches the name at any depth.
			if ok, _ := doublestar.Match(pattern, path.Base(rel)); ok {
				found = append(found, rel)
			}
		}
		return nil
	})
	if err != nil {
		return Errorf("glob: %v", err)
	}
	sort.Strings(found)
	first := max(in.Offset, 1)
	var b strings.Builder
	if len(found) == 0 {
		fmt.Fprintf(&b, "[no files match %s in %s]\n", in.Pattern, dir)
	}
	end := min(first-1+t.max(), len(found))
	for i := first - 1; i < end; i++ {
		b.WriteString(joinRel(dir, found[i]))
		b.WriteByte('\n')
	}
	if end < len(found) {
		fmt.Fprintf(&b, "[%d-%d of %d files shown; see more with offset %d, or narrow the pattern]\n", first, end, len(found), end+1)
	}
	return Result{Output: env.redact(b.String()), Lines: len(found)}
}
