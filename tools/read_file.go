package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bridle-dev/bridle/permission"
)

// ReadFile reads a text file in the workspace, a range of lines at a time.
type ReadFile struct {
	declared[ReadFile]
	// MaxLines and MaxBytes cap one read; the result says how to read on.
	MaxLines int
	MaxBytes int
	// MaxLineLen cuts single lines longer than this many bytes.
	MaxLineLen int
}

func (ReadFile) spec() *toolSpec { return &readFileSpec }

var readFileSpec = newSpec[readFileInput]("read_file", KindRead, permission.EffectRead)

type readFileInput struct {
	Path   string `json:"path" jsonschema:"file path, relative to the workspace or absolute inside it" check:"minLength=1"`
	Offset int    `json:"offset,omitempty" jsonschema:"first line to read, 1-based (default 1)" check:"minimum=1"` // first line, 1-based
	Limit  int    `json:"limit,omitempty" jsonschema:"how many lines to read" check:"minimum=1"`
}

func (t ReadFile) Description() string {
	return readFileSpec.doc.render(struct{ MaxLines, MaxBytes, MaxLineLen int }{t.maxLines(), t.maxBytes(), t.maxLineLen()})
}

func (t ReadFile) maxLines() int   { return orDefault(t.MaxLines, 2000) }
func (t ReadFile) maxBytes() int   { return orDefault(t.MaxBytes, 64<<10) }
func (t ReadFile) maxLineLen() int { return orDefault(t.MaxLineLen, 2000) }

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

func (t ReadFile) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := parseInput[readFileInput](env, t.Name(), readFileSpec.schema(), input)
	if err != nil {
		return Preview{}, err
	}
	return Preview{Title: "Read " + in.Path, Locations: []Location{{Path: env.Root.Abs(in.Path), Line: max(in.Offset, 1)}}}, nil
}

func (t ReadFile) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := parseInput[readFileInput](env, t.Name(), readFileSpec.schema(), input)
	if err != nil {
		return Errorf("%v", err)
	}
	f, fi, buf, disk, err := openRead(ctx, env, in.Path)
	if err != nil {
		return Errorf("read_file: %v", err)
	}
	defer f.Close()
	var src io.Reader = f
	total, note := fi.Size(), ""
	switch {
	case buf != nil:
		// The file is confined (opened above, and the editor asked for
		// the same path): its text, unsaved changes included, is what the
		// model reads.
		src, total, note = strings.NewReader(*buf), int64(len(*buf)), "[from the editor's buffer]\n"
	case disk != nil:
		// A read changes nothing: an editor that fails, or that is not
		// asked while a command runs, is answered from the disk, and the
		// result says so.
		note = fmt.Sprintf("[read from disk: %v]\n", disk)
	}
	first := max(in.Offset, 1)
	limit := in.Limit
	if limit <= 0 || limit > t.maxLines() {
		limit = t.maxLines()
	}
	br := bufio.NewReaderSize(src, 64<<10)
	if peek, _ := br.Peek(8 << 10); bytes.IndexByte(peek, 0) >= 0 {
		return Errorf("read_file: %s looks binary (%d bytes); it is not shown", in.Path, total)
	}
	// Collect the raw lines first and redact them together, so that a
	// secret is removed before a long line is cut (a cut secret would no
	// longer be recognised) and a key block is seen whole. They are kept
	// joined by "\n" in one buffer: a 2,000-line read is a few
	// allocations, not a few per line.
	var raw []byte
	var long []bool
	n, size, last := 0, 0, 0
	full := false
	for {
		if n&1023 == 0 && ctx.Err() != nil {
			return Errorf("read_file: cancelled")
		}
		line, err := br.ReadSlice('\n')
		cut := false
		for errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: keep its start, skip the rest.
			cut = true
			_, err = br.ReadSlice('\n')
		}
		if len(line) == 0 && err != nil {
			break
		}
		n++
		if n >= first && !full {
			text := bytes.TrimRight(line, "\r\n")
			size += min(len(text), t.maxLineLen()) + 8
			if len(long) >= limit || size > t.maxBytes() {
				full = true
			} else {
				if len(long) > 0 {
					raw = append(raw, '\n')
				}
				raw = append(raw, text...)
				long = append(long, cut)
				last = n
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return Errorf("read_file: %s: %v", in.Path, err)
		}
	}
	red := env.redact(string(raw))
	b := make([]byte, 0, len(red)+len(long)*8+64)
	for i := range long {
		text, rest, _ := strings.Cut(red, "\n")
		red = rest
		if len(text) > t.maxLineLen() || long[i] {
			text = cutUTF8(text, t.maxLineLen()) + " […line cut]"
		}
		b = appendLineNumber(b, first+i)
		b = append(b, text...)
		b = append(b, '\n')
	}
	if n == 0 {
		return Result{Output: note + fmt.Sprintf("[%s is empty]\n", in.Path), Locations: []Location{{Path: env.Root.Abs(in.Path)}}}
	}
	if first > n {
		return Errorf("read_file: %s has %d lines; offset %d is past the end", in.Path, n, first)
	}
	if last < n {
		b = fmt.Appendf(b, "[lines %d-%d of %d shown; read on with offset %d]\n", first, last, n, last+1)
	}
	return Result{
		Output:    note + string(b),
		Locations: []Location{{Path: env.Root.Abs(in.Path), Line: first}},
		Lines:     n,
		Bytes:     int(total),
	}
}

// appendLineNumber appends what fmt's "%6d\t" would: n right-aligned
// in six columns (wider when it needs more), then a tab.
func appendLineNumber(b []byte, n int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(n), 10)
	for range 6 - len(d) {
		b = append(b, ' ')
	}
	b = append(b, d...)
	return append(b, '\t')
}

// cutUTF8 returns at most n bytes of s, not splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
