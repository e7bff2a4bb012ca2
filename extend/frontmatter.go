package extend

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// maxFront bounds a file's front matter: a skill's or command's fields
// are a few lines; a repository cannot make bridle parse megabytes of
// YAML.
const maxFront = 16 << 10

var errNoFront = errors.New(`no front matter: the file must start with a line "---", then the YAML fields, then a line "---"`)

// splitFront parses data's YAML front matter (between a first line "---"
// and the next line "---") into v and returns the Markdown after it. A
// file without front matter returns errNoFront and the whole text as the
// body.
func splitFront(data []byte, v any) (body string, err error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	rest, ok := cutLine(data, "---")
	if !ok {
		return string(data), errNoFront
	}
	for off := 0; ; {
		if off > maxFront {
			return string(data), fmt.Errorf("the front matter is over %d bytes", maxFront)
		}
		if after, ok := cutLine(rest[off:], "---"); ok {
			if err := yaml.Unmarshal(rest[:off], v); err != nil {
				return string(after), fmt.Errorf("the front matter is not YAML of the expected fields: %w", err)
			}
			return string(after), nil
		}
		i := bytes.IndexByte(rest[off:], '\n')
		if i < 0 {
			return string(data), errors.New(`the front matter has no closing line "---"`)
		}
		off += i + 1
	}
}

// cutLine reports whether data starts with the line want (then spaces
// or tabs, ended by "\n", "\r\n" or the end of data) and returns what
// follows that line.
func cutLine(data []byte, want string) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(data, []byte(want))
	if !ok {
		return data, false
	}
	end := bytes.IndexByte(rest, '\n')
	if end < 0 {
		end = len(rest)
	}
	if len(bytes.TrimRight(rest[:end], " \t\r")) != 0 {
		return data, false
	}
	if end < len(rest) {
		end++
	}
	return rest[end:], true
}
