package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/bridle-dev/bridle/lsp"
	"github.com/bridle-dev/bridle/permission"
)

// Rename renames a symbol everywhere the language server finds it: the
// server's WorkspaceEdit is applied by bridle, through the edit path
// (one approval with the whole diff, the checkpoints that a rewind puts
// back, the editor's buffers when it offers them), never by the server.
type Rename struct{ declared[Rename] }

var renameSpec = newSpec[renameInput]("rename", KindEdit, permission.EffectEdit)

func (Rename) spec() *toolSpec { return &renameSpec }

type renameInput struct {
	positionInput
	NewName string `json:"new_name" jsonschema:"the symbol's new name" check:"minLength=1"`
}

// maxRenameFiles bounds the files one rename changes.
const maxRenameFiles = 200

// MultiPlanner is implemented by tools that edit several files at once
// (rename): the effect on each, computed without applying it. The
// session keeps each file's content before (a rewind puts it back) and
// records the changes as a command's (event.ToolResult.Changed).
type MultiPlanner interface {
	PlanFiles(ctx context.Context, env *Env, input json.RawMessage) ([]FileEdit, error)
}

// renamePlan is a rename's plan: each file's edit and new text.
type renamePlan struct {
	in    renameInput
	edits []FileEdit
	next  [][]byte
	count int
}

// planned is the call's plan (memoPlan): the server is asked once per
// call while the files hold what the plan read; writing is set by Run. A
// file changed since is refused, on disk too, never planned again: the
// server, asked again, may change other files than the user approved.
func (t Rename) planned(ctx context.Context, env *Env, input json.RawMessage, writing bool) (renamePlan, error) {
	in, err := parseInput[renameInput](env, t.Name(), renameSpec.schema(), input)
	if err != nil {
		return renamePlan{}, err
	}
	var changed string
	var read textSource
	pl, err := memoPlan(env, t.Name(), input, writing, false,
		func(p renamePlan) (bool, textSource, error) {
			for _, fe := range p.edits {
				same, from, err := unchanged(ctx, env, fe.Path, fe.Before)
				if !same || err != nil {
					changed, read = fe.Path, from
					return false, from, err
				}
			}
			return true, fromAnywhere, nil
		},
		func(bool) (renamePlan, error) { return t.plan(ctx, env, in) })
	if isChangedSincePlanned(err) {
		err = renameChanged(env, changed, read)
	}
	return pl, err
}

// renameChanged is why a rename is refused whose file changed since it
// was planned, read from (unchanged).
func renameChanged(env *Env, path string, from textSource) error {
	where := "on disk"
	switch {
	case from == fromEditor:
		where = "in the editor's buffer"
	case from == fromAnywhere:
		where = "it was removed"
	case env.usesEditor():
		where = "on disk, read there rather than in the editor's buffer while a command runs in the background"
	}
	return fmt.Errorf("rename: %s changed since the rename was planned (%s); nothing was changed: ask for the rename again", env.Root.Show(path), where)
}

// plan asks the server for the rename's edits and applies them to the
// files' texts (the editor's buffers when it offers them).
func (t Rename) plan(ctx context.Context, env *Env, in renameInput) (renamePlan, error) {
	q, err := positionQuery(env, t.Name(), lsp.OpRename, in.positionInput)
	if err != nil {
		return renamePlan{}, err
	}
	q.NewName = in.NewName
	a, ok := codeAsker(env)
	if !ok {
		return renamePlan{}, errors.New("rename: no language server serves this workspace")
	}
	ans, err := a.Ask(ctx, q)
	if err != nil {
		return renamePlan{}, fmt.Errorf("rename: %w", err)
	}
	if len(ans.Edits) > maxRenameFiles {
		return renamePlan{}, fmt.Errorf("rename: %s would change %d files, over the %d a rename may change; nothing was changed", ans.Server, len(ans.Edits), maxRenameFiles)
	}
	paths := make([]string, 0, len(ans.Edits))
	for p := range ans.Edits {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	pl := renamePlan{in: in}
	for _, p := range paths {
		// A server names what it likes: only the workspace's files, and
		// none hidden, are changed.
		if _, ok := env.Root.Locate(p); !ok {
			return renamePlan{}, fmt.Errorf("rename: %s's rename would change %s, which is outside the workspace or hidden; nothing was changed", ans.Server, p)
		}
		old, exists, from, err := readFileText(ctx, env, p)
		if err != nil {
			return renamePlan{}, fmt.Errorf("rename: %w", err)
		}
		if !exists {
			return renamePlan{}, fmt.Errorf("rename: %s's rename would change %s, which does not exist; nothing was changed", ans.Server, env.Root.Show(p))
		}
		next, err := applyEdits(old, ans.Edits[p])
		if err != nil {
			return renamePlan{}, fmt.Errorf("rename: %s's edits of %s do not apply (%v); nothing was changed", ans.Server, env.Root.Show(p), err)
		}
		pl.edits = append(pl.edits, FileEdit{Path: p, Before: Hash(old), After: Hash(next), Diff: editDiff(env, p, old, true, next), Old: old, from: from})
		pl.next = append(pl.next, next)
		pl.count += len(ans.Edits[p])
	}
	return pl, nil
}

// positionQuery is a question about a position in a file (runPosition's).
func positionQuery(env *Env, name, op string, in positionInput) (CodeQuery, error) {
	q, err := fileQuery(env, op, in.Path)
	if err != nil {
		return q, fmt.Errorf("%s: %w", name, err)
	}
	lines := strings.Split(string(q.Text), "\n")
	if in.Line > len(lines) {
		return q, fmt.Errorf("%s: %s has %d lines; line %d is past its end", name, in.Path, len(lines), in.Line)
	}
	q.Line, q.Column = in.Line, in.Column
	if in.Symbol != "" {
		i := strings.Index(lines[in.Line-1], in.Symbol)
		if i < 0 {
			return q, fmt.Errorf("%s: %q is not on line %d of %s, which reads: %s", name, in.Symbol, in.Line, in.Path, snippet(lines[in.Line-1]))
		}
		q.Column = utf8.RuneCountInString(lines[in.Line-1][:i]) + 1
	}
	if q.Column == 0 {
		return q, fmt.Errorf("%s: give the symbol (the identifier on line %d) or its column", name, in.Line)
	}
	return q, nil
}

// applyEdits applies a server's text edits to text: each range, in
// UTF-16 units, is found in the text; overlapping ranges are refused.
func applyEdits(text []byte, edits []lsp.TextEdit) ([]byte, error) {
	type span struct {
		from, to int
		text     string
	}
	starts := lineStarts(text)
	offset := func(line, col16 int) (int, error) {
		if line < 0 || line >= len(starts) {
			return 0, fmt.Errorf("line %d is past the end", line+1)
		}
		i, units := starts[line], 0
		for i < len(text) && units < col16 && text[i] != '\n' {
			r, size := utf8.DecodeRune(text[i:])
			units += max(utf16.RuneLen(r), 1)
			i += size
		}
		if units < col16 {
			return 0, fmt.Errorf("column %d of line %d is past its end", col16+1, line+1)
		}
		return i, nil
	}
	spans := make([]span, 0, len(edits))
	for _, e := range edits {
		from, err := offset(e.StartLine, e.StartCol16)
		if err != nil {
			return nil, err
		}
		to, err := offset(e.EndLine, e.EndCol16)
		if err != nil {
			return nil, err
		}
		if to < from {
			return nil, fmt.Errorf("a range ends before it starts, at line %d", e.StartLine+1)
		}
		spans = append(spans, span{from, to, e.NewText})
	}
	slices.SortStableFunc(spans, func(a, b span) int { return a.from - b.from })
	var b strings.Builder
	at := 0
	for _, s := range spans {
		if s.from < at {
			return nil, errors.New("two of its edits overlap")
		}
		b.Write(text[at:s.from])
		b.WriteString(s.text)
		at = s.to
	}
	b.Write(text[at:])
	return []byte(b.String()), nil
}

// lineStarts are the offsets at which text's lines start.
func lineStarts(text []byte) []int {
	starts := []int{0}
	for i, c := range text {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func (t Rename) PlanFiles(ctx context.Context, env *Env, input json.RawMessage) ([]FileEdit, error) {
	pl, err := t.planned(ctx, env, input, false)
	return pl.edits, err
}

func (t Rename) Preview(ctx context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[renameInput](env, t.Name(), renameSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	title := fmt.Sprintf("Rename %s at %s:%d to %s", cmpOr(in.Symbol, "the symbol"), in.Path, in.Line, in.NewName)
	pl, err := t.planned(ctx, env, input, false)
	if err != nil {
		// Refused whatever the user would answer: not proposed.
		return Preview{}, err
	}
	p := Preview{Title: fmt.Sprintf("%s (%d edits in %d files)", title, pl.count, len(pl.edits))}
	for _, fe := range pl.edits {
		p.Locations = append(p.Locations, Location{Path: fe.Path})
		p.Diffs = append(p.Diffs, *fe.Diff)
	}
	return p, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (t Rename) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	pl, err := t.planned(ctx, env, input, true)
	if err != nil {
		return Errorf("%v", err)
	}
	// Every file as planned, or none is written; each where this check
	// read it, or elsewhere only if that holds the same text
	// (writeFileText).
	on := make([]plannedOn, len(pl.edits))
	for i, fe := range pl.edits {
		same, from, err := unchanged(ctx, env, fe.Path, fe.Before)
		on[i] = plannedOn{before: fe.Before, from: from}
		switch {
		case err != nil:
			return Errorf("rename: %v; nothing was changed", err)
		case !same:
			return Errorf("%v", renameChanged(env, fe.Path, from))
		}
	}
	if ctx.Err() != nil {
		return Errorf("rename: cancelled before writing")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Renamed %s to %s: %d edits in %d files.\n", cmpOr(pl.in.Symbol, "the symbol"), pl.in.NewName, pl.count, len(pl.edits))
	res := Result{}
	for i, fe := range pl.edits {
		via, err := writeFileText(ctx, env, fe.Path, pl.next[i], true, on[i])
		if err != nil {
			// What was written is recorded (a rewind puts it back).
			res.Edits = pl.edits[:i]
			res.Output, res.IsError = b.String()+fmt.Sprintf("rename: writing %s: %v; the files above were changed, the others not\n", env.Root.Show(fe.Path), err), true
			return res
		}
		old := fe.Old
		fmt.Fprintf(&b, "%s%s:\n%s", env.Root.Show(fe.Path), viaNote(via), hunk(env.redact(string(old)), env.redact(string(pl.next[i])), 1, 20))
		res.Locations = append(res.Locations, Location{Path: fe.Path})
	}
	res.Edits = pl.edits
	res.Output = b.String()
	if env.Code != nil {
		files := make([]lsp.FileText, len(pl.edits))
		for i, fe := range pl.edits {
			files[i] = lsp.FileText{Path: fe.Path, Before: fe.Old, After: pl.next[i]}
		}
		if note := env.Code.EditedFiles(ctx, files); note != "" {
			res.Output += env.redact(note) + "\n"
		}
	}
	return res
}
