package tokens

import "strings"

// A text is counted line by line, and each line's count is kept: the
// same lines come back (a file read again, a cached read counted again,
// the braces and returns every file of code repeats, a log's repeated
// lines), and a kept line costs one lookup where its pieces cost one
// each (a 2,000-line read is ~20,000 pieces).
//
// A line's count is its share of the text's only where the text's split
// has a boundary after the line, and splitting never looks back (next
// reads forward), so a line split alone splits as it did in the text.
// The pieces that can hold a line break are the expressions'
// punctuation, which takes the breaks after it and (o200k_base) slashes,
// and \s*[\r\n]+, which takes the spaces before the breaks and the
// breaks; words and numbers cannot. So after a "\n" the split has a
// boundary unless the next character is '\r', '\n' or '/' (lineEnd).
//
// A line that starts with a number (read_file's "%6d\t", a log's
// timestamp) is counted as that number and the rest: the number's pieces
// (the spaces before it, then its digits three at a time) end where its
// last digit does, if what follows is no other numeral. So the rest of a
// read's line is kept without its line number, and a read again after an
// edit that moved the lines finds them.

// Bounds of the line cache: a longer line is counted piece by piece each
// time, and the cache starts again when it holds too many lines or bytes.
const (
	maxLine      = 512
	maxLines     = 1 << 16
	maxLineBytes = 8 << 20
)

// lineEnd returns the end of the line of s that starts at i: after the
// first "\n" the split has a boundary after, else len(s).
func lineEnd(s string, i int) int {
	for {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return len(s)
		}
		q := i + j + 1
		if q == len(s) {
			return q
		}
		if c := s[q]; c != '\r' && c != '\n' && c != '/' {
			return q
		}
		i = q
	}
}

// numberPrefix returns the length of the spaces and ASCII digits that
// start line when a piece boundary follows them (the next character is
// ASCII and no digit), else 0.
func numberPrefix(line string) int {
	p := 0
	for p < len(line) && line[p] == ' ' {
		p++
	}
	d := p
	for d < len(line) && line[d] >= '0' && line[d] <= '9' {
		d++
	}
	if d == p || d == len(line) || line[d] >= 0x80 {
		return 0
	}
	return d
}

// countLines counts s (valid UTF-8) line by line, with e.mu locked.
func (e *exact) countLines(s string) int {
	n := 0
	for i := 0; i < len(s); {
		end := lineEnd(s, i)
		line := s[i:end]
		if k := numberPrefix(line); k > 0 {
			n += e.line(line[:k]) + e.line(line[k:])
		} else {
			n += e.line(line)
		}
		i = end
	}
	return n
}

// line returns the count of a line (or a part of one that starts and
// ends at piece boundaries), from the cache when it is there.
func (e *exact) line(l string) int {
	if len(l) > maxLine {
		return e.countPieces(l)
	}
	if c, ok := e.lines[l]; ok {
		return int(c)
	}
	c := e.countPieces(l)
	if len(e.lines) >= maxLines || e.lineBytes+len(l) > maxLineBytes {
		clear(e.lines)
		e.lineBytes = 0
	}
	e.lines[strings.Clone(l)] = int32(c)
	e.lineBytes += len(l)
	return c
}
