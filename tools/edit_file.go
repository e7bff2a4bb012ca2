package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/sandbox/confine"
)

// EditFile replaces an exact string in a file of the workspace.
type EditFile struct{ declared[EditFile] }

func (EditFile) spec() *toolSpec { return &editFileSpec }

var editFileSpec = newSpec[editFileInput]("edit_file", KindEdit, permission.EffectEdit)

type editFileInput struct {
	Path       string `json:"path" jsonschema:"file path, relative to the workspace or absolute inside it" check:"minLength=1"`
	OldString  string `json:"old_string" jsonschema:"exact text to replace" check:"minLength=1"`
	NewString  string `json:"new_string" jsonschema:"replacement text"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence instead of exactly one"`
}

// Plan computes the edit without applying it.
func (t EditFile) Plan(ctx context.Context, env *Env, input json.RawMessage) (FileEdit, error) {
	in, err := parseInput[editFileInput](env, t.Name(), editFileSpec.schema(), input)
	if err != nil {
		return FileEdit{}, err
	}
	pl, err := t.planned(ctx, env, input, in, false)
	return pl.fe, err
}

// editPlan is an edit computed once per call: Preview, Plan and Run of
// the call share it while the file's hash still equals fe.Before.
type editPlan struct {
	old, next []byte
	// redOld and redNext are old and next redacted, once: the editor's
	// diff and the model's hunk are cut from them.
	redOld, redNext string
	fe              FileEdit
}

// planned is the call's plan (memoPlan); writing is set by Run.
// The plan says where its text was last read (FileEdit.from): by the
// check of a remembered plan, or by the plan made anew.
func (t EditFile) planned(ctx context.Context, env *Env, input json.RawMessage, in editFileInput, writing bool) (editPlan, error) {
	var checked textSource
	pl, err := memoPlan(env, t.Name(), input, writing, true,
		func(p editPlan) (same bool, from textSource, err error) {
			same, checked, err = unchanged(ctx, env, in.Path, p.fe.Before)
			return same, checked, err
		},
		func(hint bool) (editPlan, error) { return t.plan(ctx, env, in, hint) })
	if isChangedSincePlanned(err) {
		err = fmt.Errorf("edit_file: %s: %w", in.Path, err)
	}
	if checked != fromAnywhere {
		pl.fe.from = checked
	}
	return pl, err
}

// plan returns the file's content now and after the edit, both redacted,
// and the edit. With hint it may start from the text bridle last had from
// the file's buffer (planText); an edit that does not apply to that text
// is planned again on the editor's, so that what the model is told is
// about the file as it is.
func (t EditFile) plan(ctx context.Context, env *Env, in editFileInput, hint bool) (editPlan, error) {
	if in.OldString == in.NewString {
		return editPlan{}, fmt.Errorf("edit_file: old_string and new_string are the same; nothing to change")
	}
	var old []byte
	var exists, fromHint bool
	var from textSource
	var err error
	if hint {
		old, exists, from, fromHint, err = planText(ctx, env, in.Path)
	} else {
		old, exists, from, err = readFileText(ctx, env, in.Path)
	}
	if err != nil {
		return editPlan{}, fmt.Errorf("edit_file: %w", err)
	}
	pl, err := t.planOn(env, in, old, exists)
	if err != nil && fromHint {
		return t.plan(ctx, env, in, false)
	}
	pl.fe.from = from
	return pl, err
}

// planOn plans the edit on the file's text old.
func (t EditFile) planOn(env *Env, in editFileInput, old []byte, exists bool) (editPlan, error) {
	if !exists {
		return editPlan{}, fmt.Errorf("edit_file: %s does not exist in %s; to create it use write_file", in.Path, env.Root.Where())
	}
	text := string(old)
	n := strings.Count(text, in.OldString)
	switch {
	case n == 0:
		return editPlan{}, fmt.Errorf("edit_file: old_string was not found in %s%s", in.Path, notFoundHint(text, in.OldString))
	case n > 1 && !in.ReplaceAll:
		return editPlan{}, fmt.Errorf("edit_file: old_string occurs %d times in %s (lines %s); include more surrounding lines to make it unique, or set replace_all",
			n, in.Path, occurrenceLines(text, in.OldString, 10))
	}
	var next string
	if in.ReplaceAll {
		next = strings.ReplaceAll(text, in.OldString, in.NewString)
	} else {
		next = strings.Replace(text, in.OldString, in.NewString, 1)
	}
	pl := editPlan{old: old, next: []byte(next), redOld: env.redact(text), redNext: env.redact(next)}
	pl.fe = FileEdit{
		Path:   env.Root.Abs(in.Path),
		Old:    old,
		Before: Hash(old),
		After:  Hash(pl.next),
		Diff:   redactedDiff(env.Root.Abs(in.Path), &pl.redOld, pl.redNext),
	}
	return pl, nil
}

// notFoundHint says why an old_string that looks right did not match.
func notFoundHint(text, old string) string {
	switch {
	case strings.Contains(old, "[REDACTED:"):
		return "; it contains a redaction marker, and the file holds the real secret there: edit around that text instead"
	case strings.Contains(text, "\r\n") && strings.Contains(strings.ReplaceAll(text, "\r\n", "\n"), old):
		return "; the file has CRLF line endings: use \\r\\n in old_string"
	case strings.Contains(strings.Join(strings.Fields(text), " "), strings.Join(strings.Fields(old), " ")):
		return "; text with different whitespace or indentation exists: read the file again and copy it exactly"
	}
	return "; read the file again and copy the text exactly"
}

func occurrenceLines(text, sub string, max int) string {
	var lines []string
	for i, off := 0, 0; i < max; i++ {
		j := strings.Index(text[off:], sub)
		if j < 0 {
			break
		}
		lines = append(lines, fmt.Sprint(lineOf(text, off+j)))
		off += j + len(sub)
	}
	return strings.Join(lines, ", ")
}

func (t EditFile) Preview(ctx context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[editFileInput](env, t.Name(), editFileSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	p := Preview{Title: "Edit " + in.Path, Locations: []Location{{Path: env.Root.Abs(in.Path)}}}
	pl, err := t.planned(ctx, env, input, in, false)
	switch {
	case err == nil:
		p.Diff = pl.fe.Diff
		p.Locations[0].Line = lineOf(string(pl.old), strings.Index(string(pl.old), in.OldString))
	case errors.Is(err, confine.ErrHiddenPath), errors.Is(err, errWaitedOut):
		// Refused whatever the user would answer, or not made: not
		// proposed.
		return Preview{}, err
	}
	return p, nil
}

func (t EditFile) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[editFileInput](env, t.Name(), editFileSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	pl, err := t.planned(ctx, env, input, in, true)
	if err != nil {
		return Errorf("%v", err)
	}
	old, next, fe := pl.old, pl.next, pl.fe
	if ctx.Err() != nil {
		return Errorf("edit_file: cancelled before writing")
	}
	via, err := writeFileText(ctx, env, in.Path, next, true, fe.on())
	if err != nil {
		return Errorf("edit_file: %v", err)
	}
	line := lineOf(string(old), strings.Index(string(old), in.OldString))
	count := 1
	if in.ReplaceAll {
		count = strings.Count(string(old), in.OldString)
	}
	out := fmt.Sprintf("Edited %s%s: %d replacement(s).\n%s", in.Path, viaNote(via), count, hunk(pl.redOld, pl.redNext, 3, 60))
	out = diagnosed(ctx, env, out, fe.Path, old, next)
	return Result{Output: out, Diff: fe.Diff, Locations: []Location{{Path: fe.Path, Line: line}}}
}
