package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// ReadFile reads a text file in the workspace, a range of lines at a time.
type ReadFile struct {
	// MaxLines caps one read; the result says how to read on.
	MaxLines int
}

type readFileInput struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty"` // first line, 1-based
	Limit  int    `json:"limit,omitempty"`
}

func (ReadFile) Name() string { return "read_file" }

func (ReadFile) Description() string {
	return "Read a text file in the workspace. Returns numbered lines; use offset and limit to page through long files."
}

func (ReadFile) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"path":{"type":"string","description":"file path relative to the workspace"},` +
		`"offset":{"type":"integer","minimum":1,"description":"first line to read, 1-based"},` +
		`"limit":{"type":"integer","minimum":1,"description":"how many lines to read"}},` +
		`"required":["path"],"additionalProperties":false}`)
}

func (ReadFile) Kind() Kind     { return KindRead }
func (ReadFile) Effect() Effect { return EffectRead }

func parseInput[T any](tool string, input json.RawMessage) (T, error) {
	var in T
	if err := json.Unmarshal(input, &in); err != nil {
		return in, fmt.Errorf("%s: arguments do not match its schema: %w", tool, err)
	}
	return in, nil
}

func (t ReadFile) Preview(env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[readFileInput](t.Name(), input)
	if err != nil {
		return Preview{}, err
	}
	if in.Path == "" {
		return Preview{}, fmt.Errorf("read_file: path is required")
	}
	line := in.Offset
	return Preview{Title: "Read " + in.Path, Locations: []Location{{Path: in.Path, Line: line}}}, nil
}

func (t ReadFile) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[readFileInput](t.Name(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	data, err := env.Root.ReadFile(in.Path)
	if err != nil {
		return Errorf("read_file: %v", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first := max(in.Offset, 1)
	limit := in.Limit
	maxLines := t.MaxLines
	if maxLines <= 0 {
		maxLines = 2000
	}
	if limit <= 0 || limit > maxLines {
		limit = maxLines
	}
	if first > len(lines) && len(lines) > 0 {
		return Errorf("read_file: %s has %d lines; offset %d is past the end", in.Path, len(lines), first)
	}
	var b strings.Builder
	last := min(first-1+limit, len(lines))
	for i := first - 1; i < last; i++ {
		fmt.Fprintf(&b, "%6d\t%s", i+1, lines[i])
		if !strings.HasSuffix(lines[i], "\n") {
			b.WriteByte('\n')
		}
	}
	if last < len(lines) {
		fmt.Fprintf(&b, "[%d of %d lines shown; read on with offset %d]\n", last-first+1, len(lines), last+1)
	}
	return Result{
		Output:    b.String(),
		Locations: []Location{{Path: in.Path, Line: first}},
		Lines:     len(lines),
		Bytes:     len(data),
	}
}
