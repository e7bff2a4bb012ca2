package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/redact"
)

// How command_output reads a background command's output: redacted as it
// is read, never a secret cut in two reads.

// Output is the command's output the model has not read yet (all of it
// when tail is set, up to what the ring keeps), redacted with r, waiting
// up to wait for some when there is none yet and the command runs, then
// a line saying whether it runs or how it ended. While the command runs,
// a line it has not finished is left for the next read (unless it is
// longer than the redactor's reach): a secret is never cut in two reads,
// each half too short to be recognised. But a line that stays unfinished
// (a prompt waiting for input: "Password: ") is shown once the command
// has written nothing for quietLine, or when a read's wait runs out, as
// far as more text could not make it part of a secret (releaseLine).
func (b *Background) Output(ctx context.Context, r *redact.Redactor, id string, tail bool, wait time.Duration) (string, error) {
	c, err := b.find(id)
	if err != nil {
		return "", err
	}
	c.reading.Lock()
	defer c.reading.Unlock()
	deadline := time.NewTimer(min(wait, maxOutputWait))
	defer deadline.Stop()
	quiet := time.NewTimer(0)
	defer quiet.Stop()
	// waitedOut: the wait ran out; release: the command was quiet with
	// more of its unfinished line to show. Either way the read shows it,
	// though the command may write again before it does.
	waitedOut, release := false, false
	for !tail && wait > 0 {
		c.mu.Lock()
		from, end, total := max(c.read, c.out.kept()), c.unreadEnd(), c.out.total
		quietIn := quietLine - time.Since(c.lastWrite)
		changed := c.changed
		c.waiting = true
		var rest, prior string
		if end < total && total > c.tried && quietIn <= 0 {
			rest, prior = c.out.text(end, total), c.before(end)
		}
		c.mu.Unlock()
		if end > from || !c.running() {
			break
		}
		if rest != "" {
			// Quiet, with a line not finished that was not looked at yet.
			if _, more := c.releaseLine(r, prior, rest); more {
				release = true
				break
			}
			c.tried = total
		}
		var quietC <-chan time.Time
		if end < total && total > c.tried && quietIn > 0 {
			quiet.Reset(quietIn)
			quietC = quiet.C
		}
		select {
		case <-changed:
			continue
		case <-c.done:
			continue
		case <-quietC:
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		waitedOut = true
		break
	}
	if c.afterWait != nil {
		c.afterWait()
	}
	c.mu.Lock()
	kept := c.out.kept()
	var sb strings.Builder
	if c.read < kept {
		if !tail {
			fmt.Fprintf(&sb, "[%d bytes of output were not kept: only the last %d KiB are]\n", kept-c.read, backgroundRing>>10)
		}
		c.shown = "" // its line's start is gone
	}
	from, end, total := max(c.read, kept), c.unreadEnd(), c.out.total
	var earlier, before, rest, prior string
	if tail {
		earlier = c.out.text(kept, from)
	} else {
		before = c.before(from)
	}
	complete := c.out.text(from, end)
	if end < total && (waitedOut || release || time.Since(c.lastWrite) >= quietLine) {
		rest, prior = c.out.text(end, total), c.before(end)
	}
	c.read = end
	c.mu.Unlock()

	// A read that starts inside a key block (the last one ended after its
	// begin line) redacts what it gets of the block as key.
	text := r.RedactAfter(before, earlier+complete)
	if complete != "" {
		switch {
		case tail || c.shown == "":
		case strings.HasPrefix(text, c.shown):
			// The line a read showed in part goes on: the rest of it.
			text = text[len(c.shown):]
		default:
			// Redacted otherwise whole (the redactor changed since): shown
			// again whole, saying so.
			text = partShownWhole + text
		}
		c.shown = ""
	}
	unfinished := false
	if rest != "" {
		shown, more := c.releaseLine(r, prior, rest)
		switch {
		case tail:
			text += shown
		case more:
			text += shown[len(c.shown):]
		}
		unfinished = more || tail && shown != ""
		if more {
			c.shown = shown
		}
		c.tried = total
	}
	if len(text) > backgroundRead {
		cut := tailOf(text, 1<<30, backgroundRead)
		fmt.Fprintf(&sb, "[%d earlier bytes of this output are not shown]\n", len(text)-len(cut))
		text = cut
	}
	sb.WriteString(text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		sb.WriteString("\n")
	}
	if text == "" && !tail {
		sb.WriteString("[no new output]\n")
	}
	if unfinished {
		sb.WriteString("[its last line is not finished: it may be waiting for input (command_input)]\n")
	}
	select {
	case <-c.done:
		fmt.Fprintf(&sb, "[%s has ended: %s]\n", c.id, c.end.Summary)
	default:
		fmt.Fprintf(&sb, "[%s is running]\n", c.id)
	}
	return sb.String(), nil
}

// quietLine is how long a command writes nothing before a read shows the
// line it has not finished.
const quietLine = 500 * time.Millisecond

// partShownWhole starts a line a read showed in part that the next read
// shows again whole, as the redactor now redacts it (a value it learned
// since), so that it is not taken for a second line.
const partShownWhole = "[the line shown in part above, whole:]\n"

// keyReach is how far back before a read's start its output is looked
// at for a key block's begin line: further than any key block is long.
const keyReach = 64 << 10

// before is the output before at, as far back as keyReach and the ring
// go: a key block that at is inside begins in it. c.mu is held.
func (c *bgCommand) before(at int64) string {
	return c.out.text(max(c.out.kept(), at-keyReach), at)
}

// releaseLine returns what may be shown of line, the command's output
// from the start of a line it has not finished, redacted: as much of it
// as redact.Chat passes on, which holds back what more text could make
// part of a secret ("token s3cr3t-va" shows "token "). What it shows is
// the start of what the whole line gives once redacted, so the read that
// gets the rest of the line redacts it whole, with the part shown, and
// cuts that part off. more says it shows more than c.shown. prior is the
// output before line (c.before): a line inside a key block is key, and
// none of it is shown. c.reading is held.
func (c *bgCommand) releaseLine(r *redact.Redactor, prior, line string) (shown string, more bool) {
	if redact.InKeyBlock(prior) {
		return c.shown, false
	}
	shown = redact.NewChat(r).Write(line)
	return shown, len(shown) > len(c.shown) && strings.HasPrefix(shown, c.shown)
}

// unreadEnd is where the output a read may return ends: while the
// command runs, at its last line's end (the whole of a line longer than
// the redactor's reach). c.mu is held.
func (c *bgCommand) unreadEnd() int64 {
	from, end := max(c.read, c.out.kept()), c.out.total
	if c.running() {
		if i := c.out.lastIndexByte(from, '\n'); i >= 0 {
			end = i + 1
		} else if end-from < lineReach {
			end = from
		}
	}
	return end
}

// lineReach is the longest unfinished line a read holds back.
const lineReach = 8 << 10
