package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/bridle-dev/bridle/lsp"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/workspace"
)

// The code tools' questions and answers are package lsp's.
type (
	CodeQuery  = lsp.Query
	CodeItem   = lsp.Item
	CodeAnswer = lsp.Answer
)

// The questions the code tools ask (CodeQuery.Op).
const (
	CodeDiagnostics = lsp.OpDiagnostics
	CodeDefinition  = lsp.OpDefinition
	CodeReferences  = lsp.OpReferences
	CodeHover       = lsp.OpHover
	CodeSymbols     = lsp.OpSymbols
)

// CodeAsker is the part of Code the code tools use: whether a server
// serves the workspace (the tools are offered then only) and its answers.
type CodeAsker interface {
	// Offered says whether a language server is found for the session's
	// workspace.
	Offered() bool
	Ask(ctx context.Context, q CodeQuery) (CodeAnswer, error)
}

// CodeTools are the tools that ask the language servers about the code,
// offered when a server is found for the workspace (Code.Offered): they
// read, and are offered in every mode, but rename, which edits as the
// edit tools do.
func CodeTools() []Tool {
	return []Tool{Diagnostics{}, Definition{}, References{}, Hover{}, Symbols{}, Rename{}}
}

// maxCodeItems bounds the places one answer lists; maxSnippet the
// characters of each one's line.
const (
	maxCodeItems = 100
	maxSnippet   = 120
	// maxCodeFile is the largest file the tools give a server or read a
	// snippet from.
	maxCodeFile = 8 << 20
)

type positionInput struct {
	Path   string `json:"path" jsonschema:"file path, relative to the workspace or absolute inside it" check:"minLength=1"`
	Line   int    `json:"line" jsonschema:"line, from 1" check:"minimum=1"`
	Symbol string `json:"symbol,omitempty" jsonschema:"the identifier on that line to ask about (its first occurrence); or give column"`
	Column int    `json:"column,omitempty" jsonschema:"column, from 1, in characters (when symbol is not given)" check:"minimum=1"`
}

type (
	// Definition: where the symbol at a position is defined.
	Definition struct{ declared[Definition] }
	// References: where the symbol at a position is used.
	References struct{ declared[References] }
	// Hover: the type and documentation of the symbol at a position.
	Hover struct{ declared[Hover] }
)

var (
	definitionSpec = newSpec[positionInput]("definition", KindSearch, permission.EffectRead)
	referencesSpec = newSpec[positionInput]("references", KindSearch, permission.EffectRead)
	hoverSpec      = newSpec[positionInput]("hover", KindRead, permission.EffectRead)
)

func (Definition) spec() *toolSpec { return &definitionSpec }
func (References) spec() *toolSpec { return &referencesSpec }
func (Hover) spec() *toolSpec      { return &hoverSpec }

func (t Definition) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	return positionPreview(env, t.Name(), definitionSpec, "Definition at", input)
}
func (t References) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	return positionPreview(env, t.Name(), referencesSpec, "References of", input)
}
func (t Hover) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	return positionPreview(env, t.Name(), hoverSpec, "Hover at", input)
}

func positionPreview(env *Env, name string, spec toolSpec, title string, input json.RawMessage) (Preview, error) {
	in, err := parseInput[positionInput](env, name, spec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	what := fmt.Sprintf("%s:%d", in.Path, in.Line)
	if in.Symbol != "" {
		what += " " + in.Symbol
	}
	return Preview{Title: title + " " + what, Locations: []Location{{Path: env.Root.Abs(in.Path), Line: in.Line}}}, nil
}

func (t Definition) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	return runPosition(ctx, env, t.Name(), definitionSpec, CodeDefinition, input)
}
func (t References) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	return runPosition(ctx, env, t.Name(), referencesSpec, CodeReferences, input)
}
func (t Hover) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	return runPosition(ctx, env, t.Name(), hoverSpec, CodeHover, input)
}

// runPosition asks a question about a position in a file.
func runPosition(ctx context.Context, env *Env, name string, spec toolSpec, op string, input json.RawMessage) Result {
	in, err := parseInput[positionInput](env, name, spec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	q, err := positionQuery(env, name, op, in)
	if err != nil {
		return Errorf("%v", err)
	}
	return ask(ctx, env, name, q)
}

// fileQuery is a question about the file at path, which the tool reads
// through the workspace's confinement (a hidden or outside path is
// refused as read_file refuses it).
func fileQuery(env *Env, op, path string) (CodeQuery, error) {
	text, err := env.Root.ReadFile(path, maxCodeFile)
	if err != nil {
		return CodeQuery{}, err
	}
	return CodeQuery{Op: op, Path: env.Root.Abs(path), Text: text}, nil
}

// codeAsker is the Env's language servers, if they answer questions.
func codeAsker(env *Env) (CodeAsker, bool) {
	a, ok := env.Code.(CodeAsker)
	return a, ok && env.Code != nil
}

// ask asks the servers and words the answer for the model.
func ask(ctx context.Context, env *Env, name string, q CodeQuery) Result {
	a, ok := codeAsker(env)
	if !ok {
		return Errorf("%s: no language server serves this workspace", name)
	}
	ans, err := a.Ask(ctx, q)
	if err != nil {
		return Errorf("%s: %v", name, err)
	}
	return Result{Output: env.redact(render(env, q, ans)), Redacted: true, Locations: locations(env, ans.Items)}
}

// render words an answer: each place as path:line:col, its label and its
// line's text, at most maxCodeItems of them.
func render(env *Env, q CodeQuery, ans CodeAnswer) string {
	var b strings.Builder
	if ans.Note != "" {
		b.WriteString(ans.Note + "\n")
	}
	if q.Op == CodeHover {
		if strings.TrimSpace(ans.Text) == "" {
			fmt.Fprintf(&b, "%s: nothing to show at %s:%d:%d.\n", ans.Server, env.Root.Show(q.Path), q.Line, q.Column)
		} else {
			b.WriteString(capText(ans.Text, 4000) + "\n")
		}
		return b.String()
	}
	if len(ans.Items) == 0 {
		fmt.Fprintf(&b, "%s: %s.\n", ans.Server, noneFound(q))
		return b.String()
	}
	files := map[string][]string{}
	shown := 0
	for _, it := range ans.Items {
		if shown == maxCodeItems {
			fmt.Fprintf(&b, "… and %d more\n", len(ans.Items)-maxCodeItems)
			break
		}
		path, text, ok := place(env, files, it)
		if !ok {
			continue
		}
		shown++
		col := it.Col16 + 1
		if text != "" || it.Col16 == 0 {
			col = runeColumn(text, it.Col16) + 1
		}
		line := fmt.Sprintf("%s%s:%d:%d", strings.Repeat("  ", it.Depth), path, it.Line, col)
		if it.Label != "" {
			line += " " + it.Label
		}
		if text != "" && q.Op != CodeDiagnostics {
			line += " | " + snippet(text)
		}
		b.WriteString(line + "\n")
	}
	if shown == 0 {
		fmt.Fprintf(&b, "%s: %s in the workspace.\n", ans.Server, noneFound(q))
	}
	return b.String()
}

func noneFound(q CodeQuery) string {
	switch q.Op {
	case CodeDiagnostics:
		return "no problems"
	case CodeSymbols:
		return "no symbols"
	case CodeDefinition:
		return "no definition found"
	}
	return "no references found"
}

// place is how the model sees an item's file and the text of its line:
// a workspace file relative to the session's directory, read through its
// confinement; a file outside it (a library's) by its absolute path,
// without its text; a hidden one not at all (false).
func place(env *Env, files map[string][]string, it CodeItem) (string, string, bool) {
	for _, h := range env.Root.Hidden() {
		if it.Path == h || strings.HasPrefix(it.Path, h+string(filepath.Separator)) {
			return "", "", false
		}
	}
	if _, ok := env.Root.Locate(it.Path); !ok {
		if inside(env, it.Path) {
			return "", "", false // a link out, or hidden below the workspace
		}
		return it.Path, "", true
	}
	lines, ok := files[it.Path]
	if !ok {
		if text, err := env.Root.ReadFile(it.Path, maxCodeFile); err == nil {
			lines = strings.Split(string(text), "\n")
		}
		files[it.Path] = lines
	}
	var text string
	if it.Line >= 1 && it.Line <= len(lines) {
		text = lines[it.Line-1]
	}
	return env.Root.Show(it.Path), text, true
}

// inside says whether path is in one of the session's directories.
func inside(env *Env, path string) bool {
	for _, d := range env.Root.Dirs() {
		if path == d || strings.HasPrefix(path, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// locations are the workspace places of an answer, for the editor's card.
func locations(env *Env, items []CodeItem) []Location {
	var out []Location
	for _, it := range items {
		if len(out) == 10 {
			break
		}
		if abs, ok := env.Root.Locate(it.Path); ok {
			out = append(out, Location{Path: abs, Line: it.Line})
		}
	}
	return out
}

// runeColumn is the character column (from 0) of a UTF-16 column in line.
func runeColumn(line string, col16 int) int {
	n, units := 0, 0
	for _, r := range line {
		if units >= col16 {
			break
		}
		units += utf16.RuneLen(r)
		if utf16.RuneLen(r) < 0 {
			units++
		}
		n++
	}
	return n
}

// snippet is a line as an answer quotes it: trimmed, cut.
func snippet(line string) string {
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > maxSnippet {
		line = string([]rune(line)[:maxSnippet]) + "…"
	}
	return line
}

// capText cuts text to max bytes, at a line.
func capText(text string, max int) string {
	text = strings.TrimSpace(text)
	if len(text) <= max {
		return text
	}
	cut := strings.LastIndex(text[:max], "\n")
	if cut < 0 {
		cut = max
	}
	return text[:cut] + "\n… (cut)"
}

// The code tools' answers depend on the whole workspace (a definition
// moves when any file changes): they are cached until the watcher sees a
// change under the session's directories, and dropped with every edit.
func codeDeps(env *Env) []workspace.Dep {
	var out []workspace.Dep
	for _, d := range env.Root.Dirs() {
		out = append(out, workspace.Dep{Path: d, Tree: true})
	}
	return out
}

func (Definition) Depends(_ context.Context, env *Env, _ json.RawMessage) []workspace.Dep {
	return codeDeps(env)
}
func (References) Depends(_ context.Context, env *Env, _ json.RawMessage) []workspace.Dep {
	return codeDeps(env)
}
func (Hover) Depends(_ context.Context, env *Env, _ json.RawMessage) []workspace.Dep {
	return codeDeps(env)
}
func (Symbols) Depends(_ context.Context, env *Env, _ json.RawMessage) []workspace.Dep {
	return codeDeps(env)
}

// Diagnostics are not cached: a server publishes them when it is done,
// which the watcher does not see.

// Diagnostics: what the language servers say is wrong, in a file or the
// whole workspace.
type Diagnostics struct{ declared[Diagnostics] }

var diagnosticsSpec = newSpec[diagnosticsInput]("diagnostics", KindSearch, permission.EffectRead)

func (Diagnostics) spec() *toolSpec { return &diagnosticsSpec }

type diagnosticsInput struct {
	Path     string `json:"path,omitempty" jsonschema:"a file (relative to the workspace or absolute inside it); omit for the whole workspace"`
	Severity string `json:"severity,omitempty" jsonschema:"the least severe shown: error, warning (default), info or hint" check:"enum=error|warning|info|hint"`
}

func (t Diagnostics) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[diagnosticsInput](env, t.Name(), diagnosticsSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	if in.Path == "" {
		return Preview{Title: "Diagnostics of the workspace"}, nil
	}
	return Preview{Title: "Diagnostics of " + in.Path, Locations: []Location{{Path: env.Root.Abs(in.Path)}}}, nil
}

func (t Diagnostics) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[diagnosticsInput](env, t.Name(), diagnosticsSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	q := CodeQuery{Op: CodeDiagnostics}
	if in.Path != "" {
		if q, err = fileQuery(env, CodeDiagnostics, in.Path); err != nil {
			return Errorf("diagnostics: %v", err)
		}
	}
	q.Severity = cmp.Or(in.Severity, "warning")
	return ask(ctx, env, t.Name(), q)
}

// Symbols: a file's outline, or the workspace's symbols matching a query.
type Symbols struct{ declared[Symbols] }

var symbolsSpec = newSpec[symbolsInput]("symbols", KindSearch, permission.EffectRead)

func (Symbols) spec() *toolSpec { return &symbolsSpec }

type symbolsInput struct {
	Path  string `json:"path,omitempty" jsonschema:"a file whose outline to list (relative to the workspace or absolute inside it)"`
	Query string `json:"query,omitempty" jsonschema:"a name (or part of one) to find among the workspace's symbols, when no path is given"`
}

func (t Symbols) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[symbolsInput](env, t.Name(), symbolsSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	switch {
	case in.Path != "":
		return Preview{Title: "Symbols of " + in.Path, Locations: []Location{{Path: env.Root.Abs(in.Path)}}}, nil
	case in.Query != "":
		return Preview{Title: "Symbols matching " + in.Query}, nil
	}
	return Preview{}, errNoPath
}

func (t Symbols) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[symbolsInput](env, t.Name(), symbolsSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	q := CodeQuery{Op: CodeSymbols, Query: in.Query}
	switch {
	case in.Path != "":
		if q, err = fileQuery(env, CodeSymbols, in.Path); err != nil {
			return Errorf("symbols: %v", err)
		}
	case in.Query == "":
		return Errorf("symbols: %v", errNoPath)
	}
	return ask(ctx, env, t.Name(), q)
}

// errNoPath is the symbols tool's error with neither a path nor a query.
var errNoPath = errors.New("give a path (the file's outline) or a query (symbols of the workspace)")
