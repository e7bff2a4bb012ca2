package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/bridle-dev/bridle/permission"
)

// ReadArtifact pages through the whole output of an earlier call whose
// result was capped.
type ReadArtifact struct {
	declared[ReadArtifact]
	MaxLines int
	MaxBytes int
}

func (ReadArtifact) spec() *toolSpec { return &readArtifactSpec }

var readArtifactSpec = newSpec[readArtifactInput]("read_artifact", KindRead, permission.EffectNone)

type readArtifactInput struct {
	ID      string `json:"id" jsonschema:"artifact id, as a capped result named it" check:"minLength=1"`
	Offset  int    `json:"offset,omitempty" jsonschema:"first line, 1-based" check:"minimum=1"`
	Limit   int    `json:"limit,omitempty" jsonschema:"how many lines" check:"minimum=1"`
	Pattern string `json:"pattern,omitempty" jsonschema:"only lines matching this regular expression (RE2)"`
}

func (t ReadArtifact) Description() string {
	return readArtifactSpec.doc.render(struct{ MaxLines, MaxBytes int }{t.maxLines(), t.maxBytes()})
}

// resultSeq reads a result id, "r<seq>" (contextwin.ResultID).
func resultSeq(id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, "r")
	if !ok || !digits(rest) {
		return 0, false
	}
	seq, err := strconv.ParseInt(rest, 10, 64)
	return seq, err == nil
}

func (t ReadArtifact) maxLines() int { return orDefault(t.MaxLines, 1000) }
func (t ReadArtifact) maxBytes() int { return orDefault(t.MaxBytes, 48<<10) }

func (t ReadArtifact) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[readArtifactInput](env, t.Name(), readArtifactSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	return Preview{Title: "Read artifact " + in.ID}, nil
}

func (t ReadArtifact) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[readArtifactInput](env, t.Name(), readArtifactSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	var re *regexp.Regexp
	if in.Pattern != "" {
		if re, err = regexp.Compile(in.Pattern); err != nil {
			return Errorf("read_artifact: %q is not a valid RE2 regular expression: %v", in.Pattern, err)
		}
	}
	var data []byte
	if seq, ok := resultSeq(in.ID); ok && env.Results != nil {
		// A result the log keeps, as the model saw it before it was
		// dropped from the window.
		out, err := env.Results(seq)
		if err != nil {
			return Errorf("read_artifact: %v", err)
		}
		data = []byte(out)
	} else {
		if env.Artifacts == nil {
			return Errorf("read_artifact: this session keeps no artifacts")
		}
		if data, err = env.Artifacts.Read(in.ID); err != nil {
			return Errorf("read_artifact: %v", err)
		}
	}
	lines := splitLines(string(data))
	first := max(in.Offset, 1)
	if first > len(lines) && len(lines) > 0 {
		return Errorf("read_artifact: %s has %d lines; offset %d is past the end", in.ID, len(lines), first)
	}
	limit := in.Limit
	if limit <= 0 || limit > t.maxLines() {
		limit = t.maxLines()
	}
	var b strings.Builder
	shown, last, matched := 0, first-1, 0
	for i := first - 1; i < len(lines); i++ {
		if re != nil && !re.MatchString(lines[i]) {
			continue
		}
		matched++
		entry := fmt.Sprintf("%6d\t%s\n", i+1, cutUTF8(lines[i], 2000))
		if shown >= limit || b.Len()+len(entry) > t.maxBytes() {
			break
		}
		b.WriteString(entry)
		shown++
		last = i + 1
	}
	switch {
	case re != nil && shown == 0:
		fmt.Fprintf(&b, "[no lines from %d on match %s]\n", first, in.Pattern)
	case last < len(lines):
		fmt.Fprintf(&b, "[%d lines shown, up to line %d of %d; read on with offset %d]\n", shown, last, len(lines), last+1)
	}
	// Artifacts are redacted when written; redacting again costs little
	// and covers secrets learnt since.
	return Result{Output: env.redact(b.String()), Lines: len(lines), Bytes: len(data)}
}
