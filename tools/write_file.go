package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/sandbox/fslock"
)

// WriteFile creates or overwrites a file of the workspace.
type WriteFile struct{ declared[WriteFile] }

func (WriteFile) spec() *toolSpec { return &writeFileSpec }

var writeFileSpec = newSpec[writeFileInput]("write_file", KindEdit, permission.EffectEdit)

type writeFileInput struct {
	Path    string `json:"path" jsonschema:"file path, relative to the workspace or absolute inside it" check:"minLength=1"`
	Content string `json:"content" jsonschema:"the file's whole new content"`
}

// Plan computes the write without doing it.
func (t WriteFile) Plan(ctx context.Context, env *Env, input json.RawMessage) (FileEdit, error) {
	in, err := parseInput[writeFileInput](env, t.Name(), writeFileSpec.schema(), input)
	if err != nil {
		return FileEdit{}, err
	}
	return t.planned(ctx, env, input, in, false)
}

// planned is the write's plan, computed once per call (memoPlan): Preview,
// Plan and Run of the call share it while the file's hash still equals
// Before. writing is set by Run.
func (t WriteFile) planned(ctx context.Context, env *Env, input json.RawMessage, in writeFileInput, writing bool) (FileEdit, error) {
	var checked textSource
	fe, err := memoPlan(env, t.Name(), input, writing, true,
		func(fe FileEdit) (same bool, from textSource, err error) {
			same, checked, err = unchanged(ctx, env, in.Path, fe.Before)
			return same, checked, err
		},
		func(hint bool) (FileEdit, error) { return t.plan(ctx, env, in, hint) })
	if isChangedSincePlanned(err) {
		err = fmt.Errorf("write_file: %s: %w", in.Path, err)
	}
	if checked != fromAnywhere {
		fe.from = checked // where the write is to go (EditFile.planned)
	}
	return fe, err
}

// plan reads the file's text now (with hint, maybe the text bridle last
// had from its buffer: planText) and plans the write over it.
func (t WriteFile) plan(ctx context.Context, env *Env, in writeFileInput, hint bool) (FileEdit, error) {
	if len(in.Content) > MaxEditBytes {
		return FileEdit{}, fmt.Errorf("write_file: content is %d bytes, over the %d-byte limit", len(in.Content), MaxEditBytes)
	}
	var old []byte
	var exists bool
	var from textSource
	var err error
	if hint {
		old, exists, from, _, err = planText(ctx, env, in.Path)
	} else {
		old, exists, from, err = readFileText(ctx, env, in.Path)
	}
	if err != nil {
		return FileEdit{}, fmt.Errorf("write_file: %w", err)
	}
	if !exists {
		// A new file in a hidden directory (reached through a link, or
		// not made yet) is refused before it is proposed.
		if err := env.Root.CheckWrite(in.Path); err != nil {
			return FileEdit{}, fmt.Errorf("write_file: %v", err)
		}
	}
	fe := FileEdit{Path: env.Root.Abs(in.Path), After: Hash([]byte(in.Content)), Diff: editDiff(env, in.Path, old, exists, []byte(in.Content))}
	if exists {
		fe.Before, fe.Old, fe.from = Hash(old), old, from
	}
	return fe, nil
}

func (t WriteFile) Preview(ctx context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[writeFileInput](env, t.Name(), writeFileSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	p := Preview{Title: "Write " + in.Path, Locations: []Location{{Path: env.Root.Abs(in.Path)}}}
	fe, err := t.planned(ctx, env, input, in, false)
	switch {
	case err == nil:
		p.Diff = fe.Diff
	case errors.Is(err, fslock.ErrBusy):
		// A card previewed without waiting (WithoutWaiting): the call
		// plans again when it runs.
	default:
		return Preview{}, err
	}
	return p, nil
}

func (t WriteFile) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[writeFileInput](env, t.Name(), writeFileSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	fe, err := t.planned(ctx, env, input, in, true)
	if err != nil {
		return Errorf("%v", err)
	}
	if ctx.Err() != nil {
		return Errorf("write_file: cancelled before writing")
	}
	via, err := writeFileText(ctx, env, in.Path, []byte(in.Content), fe.Before != "", fe.on())
	if err != nil {
		return Errorf("write_file: %v", err)
	}
	lines := strings.Count(in.Content, "\n")
	if in.Content != "" && !strings.HasSuffix(in.Content, "\n") {
		lines++
	}
	var out string
	if fe.Diff.OldText == nil {
		out = fmt.Sprintf("Created %s%s (%d lines, %d bytes).\n", in.Path, viaNote(via), lines, len(in.Content))
	} else {
		out = fmt.Sprintf("Wrote %s%s (%d lines, %d bytes).\n%s", in.Path, viaNote(via), lines, len(in.Content), hunk(*fe.Diff.OldText, fe.Diff.NewText, 3, 60))
	}
	var before []byte
	if fe.Before != "" {
		before = fe.Old
		if before == nil {
			before = []byte{}
		}
	}
	out = diagnosed(ctx, env, out, fe.Path, before, []byte(in.Content))
	return Result{Output: out, Diff: fe.Diff, Locations: []Location{{Path: fe.Path, Line: 1}}}
}
