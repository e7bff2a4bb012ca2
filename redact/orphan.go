package redact

import (
	"bytes"
	"strings"
)

// A key block's end line without its begin line is the tail of a key
// printed alone (tail key.pem, a capped output's last lines): the lines
// of key right before it, and the end line, are the key's. Only those
// are taken, and only as far back as a Chat holds (orphanBody), so that
// what a streamed answer shows at once, a line of words, is never taken
// for a key by an end line that comes after it.

// orphanStage is the stage of orphanEnd's hits: after every pattern
// (the assignment is the last).
const orphanStage = firstPatternStage + assignment + 1

// maxEndName bounds the name in a key block's end line (RSA, EC,
// ENCRYPTED, OPENSSH, PGP).
const maxEndName = 64

// orphanBody bounds how far before its end line the key lines of a
// block without its begin line start: what a Chat holds, less the
// longest end line.
const orphanBody = maxHold - 128

// orphanEnd returns the end of each key block whose begin line was cut
// off: its end line and the key lines before it (keyBody). s is masked:
// an end line inside a block found whole is no longer there. midLine
// says s does not start a line.
func orphanEnd(s []byte, midLine bool) []hit {
	var hs []hit
	for off := 0; ; {
		i := bytes.Index(s[off:], []byte("-----END"))
		if i < 0 {
			return hs
		}
		i += off
		off = i + 8
		if i == 0 && midLine {
			continue
		}
		if end := keyEndLine(s, i); end > 0 {
			st := keyBody(s, i, i-orphanBody, midLine)
			hs = append(hs, hit{start: st, end: end, from: st, to: end, kind: "private-key", stage: orphanStage})
			off = end
		}
	}
}

// keyEndLine returns where the end marker of a key block at i ends, or -1
// if the line at i is not one. The marker must be the whole line: code
// that handles keys names "-----END" and "PRIVATE KEY" in strings, and
// took for the tail of a key was redacted from its first line.
func keyEndLine(s []byte, i int) int {
	if i > 0 && s[i-1] != '\n' {
		return -1
	}
	l := s[i:min(len(s), i+maxEndLine+1)]
	j := bytes.IndexByte(l, '\n')
	if j < 0 && len(l) > maxEndLine {
		return -1
	}
	if j >= 0 {
		l = l[:j]
	}
	l = bytes.TrimSuffix(l, []byte("\r"))
	for _, tail := range endTails {
		if bytes.HasSuffix(l, []byte(tail)) && len(l) >= len("-----END")+len(tail) && endName(string(l[len("-----END"):len(l)-len(tail)])) {
			return i + len(l)
		}
	}
	return -1
}

// endTails end a key block's end line, after its name.
var endTails = []string{" PRIVATE KEY-----", " PRIVATE KEY BLOCK-----"}

// maxEndLine is the length of the longest end line, and its "\r".
const maxEndLine = len("-----END") + maxEndName + len(" PRIVATE KEY BLOCK-----") + 1

// endName reports whether n may be the name in an end line.
func endName(n string) bool {
	if len(n) > maxEndName {
		return false
	}
	for i := range len(n) {
		if c := n[i]; !isUpper(c) && !isDigit(c) && c != ' ' {
			return false
		}
	}
	return true
}

// endBegun reports whether l, the last line of a text, may still become
// a key block's end line (and its "\r").
func endBegun(l string) bool {
	const head = "-----END"
	if len(l) <= len(head) {
		return strings.HasPrefix(head, l)
	}
	if !strings.HasPrefix(l, head) || len(l) > maxEndLine {
		return false
	}
	rest := l[len(head):]
	for n := 0; n <= min(maxEndName, len(rest)); n++ {
		if !endName(rest[:n]) {
			break
		}
		t := rest[n:]
		for _, tail := range endTails {
			if strings.HasPrefix(tail+"\r", t) {
				return true
			}
		}
	}
	return false
}

// keyBody returns where the key lines right before the line starting at
// i start: lines of base64 (or of secrets masked, '[') that start at lo
// or after. The first byte of s starts a line unless midLine says not.
func keyBody[S ~string | ~[]byte](s S, i, lo int, midLine bool) int {
	st := i
	for st > 0 {
		// The line before ends at st-1, with its "\n".
		end := st - 1
		if end > 0 && s[end-1] == '\r' {
			end--
		}
		j, floor := end, max(lo, 0)
		for j > floor && s[j-1] != '\n' && keyChar(s[j-1]) {
			j--
		}
		if j == end || j > 0 && s[j-1] != '\n' || j == 0 && midLine {
			return st
		}
		st = j
	}
	return st
}

// keyChar is what a key's base64 lines are made of, and the mask of a
// secret found inside one.
func keyChar(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '=' || c == '[' }

// orphanComing returns where the end of s starts that an end line still
// to come would take for a key (orphanEnd): the last line, if it may
// still become the end line or a key line, and the key lines before it;
// len(s) if none. hs are the hits of s, masked as orphanEnd sees them.
func orphanComing(s string, hs []hit, midLine bool) int {
	l := strings.LastIndexByte(s, '\n') + 1
	line := s[l:]
	// The end line starts at l if it has begun, or after the last line
	// if that may be a key line.
	endAt := l
	from := max(0, l-orphanBody-1)
	b := []byte(s[from:])
	for _, h := range hs {
		for k := max(h.start, from); k < h.end; k++ {
			b[k-from] = '['
		}
	}
	switch {
	case line == "" || endBegun(line):
	case keyLine(b[l-from:]):
		endAt = len(s) + 1
		if l < endAt-orphanBody {
			return len(s)
		}
	default:
		return len(s)
	}
	st := from + keyBody(b, l-from, endAt-orphanBody-from, midLine || from > 0)
	if line == "" && st == l {
		return len(s)
	}
	return st
}

// keyLine reports whether l, the last line of a text, may still become
// a key line.
func keyLine(l []byte) bool {
	l = bytes.TrimSuffix(l, []byte("\r"))
	for _, c := range l {
		if !keyChar(c) {
			return false
		}
	}
	return true
}
