package tools

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Caps bound what a tool returns to the model. Output past them is
// spilled to an artifact and the result says how to read the rest.
type Caps struct {
	HeadLines int `json:"head_lines"`
	HeadBytes int `json:"head_bytes"`
	TailLines int `json:"tail_lines"`
	TailBytes int `json:"tail_bytes"`
}

// capture caps a tool's output where it is produced: it keeps everything
// while the output is small, and once it outgrows the caps keeps the head
// and the tail in memory and spills the whole to an artifact. What is
// written to it must already be redacted.
type capture struct {
	caps Caps
	env  *Env

	all   []byte // the whole output while it fits the caps
	over  bool
	head  []byte
	headN int // lines in head
	tail  []byte
	// spill holds the whole output once over; nil without an artifact
	// store or when it could not be created.
	spill      *os.File
	spillErr   error
	spilled    int64
	spillCut   bool
	lines      int
	bytes      int
	endsInLine bool // the last byte written was not a newline
}

func newCapture(env *Env, caps Caps) *capture {
	return &capture{env: env, caps: caps}
}

func (c *capture) WriteString(s string) { c.Write([]byte(s)) }

// Write implements io.Writer; it never fails.
func (c *capture) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.bytes += len(p)
	c.lines += bytes.Count(p, []byte{'\n'})
	c.endsInLine = p[len(p)-1] != '\n'
	if !c.over {
		c.all = append(c.all, p...)
		if !c.fits(c.all) {
			c.overflow()
		}
		return len(p), nil
	}
	c.keep(p)
	return len(p), nil
}

func (c *capture) fits(b []byte) bool {
	lines := bytes.Count(b, []byte{'\n'})
	return len(b) <= c.caps.HeadBytes+c.caps.TailBytes && lines <= c.caps.HeadLines+c.caps.TailLines
}

// overflow switches from keeping everything to keeping head and tail.
func (c *capture) overflow() {
	c.over = true
	if c.env != nil && c.env.Artifacts != nil {
		c.spill, c.spillErr = c.env.Artifacts.Create(ArtifactID(c.env.Key))
	}
	all := c.all
	c.all = nil
	c.keep(all)
}

func (c *capture) keep(p []byte) {
	if c.spill != nil && !c.spillCut {
		n := len(p)
		if max := c.env.Artifacts.Max; max > 0 && c.spilled+int64(n) > max {
			n = int(max - c.spilled)
			c.spillCut = true
		}
		if _, err := c.spill.Write(p[:n]); err != nil {
			c.spillErr = err
			c.spillCut = true
		}
		c.spilled += int64(n)
	}
	// Head: whole lines up to the caps.
	for len(p) > 0 && len(c.head) < c.caps.HeadBytes && c.headN < c.caps.HeadLines {
		room := c.caps.HeadBytes - len(c.head)
		i := bytes.IndexByte(p, '\n')
		if i < 0 || i+1 > room {
			if len(c.head) == 0 {
				// One line longer than the cap: keep its start.
				c.head = append(c.head, p[:min(room, len(p))]...)
			}
			// Leave the rest to the tail; the head is full.
			c.headN = c.caps.HeadLines
			break
		}
		c.head = append(c.head, p[:i+1]...)
		c.headN++
		p = p[i+1:]
	}
	if c.caps.TailBytes > 0 {
		c.tail = append(c.tail, p...)
		if len(c.tail) > 2*c.caps.TailBytes {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-c.caps.TailBytes:]...)
		}
	}
}

// Finish returns the output as the model sees it and the result's
// measures.
func (c *capture) Finish() Result {
	lines := c.lines
	if c.endsInLine {
		lines++
	}
	if !c.over {
		return Result{Output: string(c.all), Redacted: true, Lines: lines, Bytes: c.bytes}
	}
	tail := c.tail
	if len(tail) > c.caps.TailBytes {
		tail = tail[len(tail)-c.caps.TailBytes:]
		// Start at a line boundary: a cut line, or a secret cut in
		// half, is worse than a shorter tail.
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i+1 < len(tail) {
			tail = tail[i+1:]
		}
	}
	for n := bytes.Count(tail, []byte{'\n'}); n > c.caps.TailLines; n-- {
		tail = tail[bytes.IndexByte(tail, '\n')+1:]
	}
	headLines := bytes.Count(c.head, []byte{'\n'})
	tailLines := bytes.Count(tail, []byte{'\n'})
	if len(tail) > 0 && tail[len(tail)-1] != '\n' {
		tailLines++
	}
	res := Result{Redacted: true, Lines: lines, Bytes: c.bytes}
	var b strings.Builder
	b.Write(c.head)
	if len(c.head) > 0 && c.head[len(c.head)-1] != '\n' {
		b.WriteString("…\n")
	}
	fmt.Fprintf(&b, "[%d lines, %d bytes; showing the first %d and the last %d lines; ", lines, c.bytes, headLines, tailLines)
	switch {
	case c.spill != nil && c.spillErr == nil:
		c.spill.Close()
		res.Artifact = ArtifactID(c.env.Key)
		if c.spillCut {
			fmt.Fprintf(&b, "read_artifact %s for the rest (it keeps the first %d bytes)]\n", res.Artifact, c.spilled)
		} else {
			fmt.Fprintf(&b, "read_artifact %s for the rest]\n", res.Artifact)
		}
	case c.spillErr != nil:
		if c.spill != nil {
			c.spill.Close()
		}
		fmt.Fprintf(&b, "the rest was not kept: %v]\n", c.spillErr)
	default:
		b.WriteString("the rest was not kept]\n")
	}
	b.Write(tail)
	res.Output = b.String()
	return res
}
