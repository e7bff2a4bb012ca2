package contextwin

import (
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/tokens"
)

// PinsText renders the pinned constraints and decisions, placed right
// after the first request.
func PinsText(p Pins) string {
	if p.Empty() {
		return ""
	}
	var b strings.Builder
	b.WriteString("Pinned for this whole session (they hold until the user changes them):\n")
	if len(p.Constraints) > 0 {
		b.WriteString("Constraints:\n")
		for _, c := range p.Constraints {
			b.WriteString("- " + c + "\n")
		}
	}
	if len(p.Decisions) > 0 {
		b.WriteString("Decisions:\n")
		for _, d := range p.Decisions {
			b.WriteString("- " + d + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// ReminderText is the short reminder of the constraints that ends every
// request: the edges of a prompt are what a model obeys best.
func ReminderText(p Pins) string {
	if len(p.Constraints) == 0 {
		return ""
	}
	return ReminderPrefix + "the pinned constraints still hold: " + strings.Join(p.Constraints, "; ") + ")"
}

// PlanText renders the current plan for the end of every request, "" when
// there is none. It is a reminder (it starts with ReminderPrefix): it sits
// at the tail, after the history, because it changes as the work goes and
// the prefix before the history must not.
func PlanText(entries []event.PlanEntry) string {
	if len(entries) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(ReminderPrefix + "the current plan; update it with the plan tool as steps start and finish:\n")
	for _, e := range entries {
		b.WriteString(e.Mark() + " " + e.Content + "\n")
	}
	return strings.TrimRight(b.String(), "\n") + ")"
}

// tailText joins the reminders that end every request.
func tailText(texts ...string) string {
	var parts []string
	for _, t := range texts {
		if t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// ReminderPrefix starts every reminder; provider/scripted.ReminderPrefix
// equals it (a test keeps them equal), so scripted models do not take the
// reminder for a prompt.
const ReminderPrefix = "(Reminder: "

// Address replaces a dropped tool output: what the call was, how big its
// output was, and how to get it back exactly as the model saw it: its
// artifact when it has one (the whole output), else the result itself, by
// its seq in the log (ResultID), which read_artifact serves. Rerunning the
// call would show the present, which may differ.
func Address(r event.ToolResult, seq int64, call event.ToolCall, tokens int) string {
	what := r.Name
	if what == "" {
		what = call.Name
	}
	if in := strings.Join(strings.Fields(string(call.Input)), " "); in != "" && in != "{}" {
		what += " " + clip(in, 120)
	}
	lines, bytes := r.Lines, r.Bytes
	if lines == 0 {
		lines = strings.Count(r.Output, "\n")
		if r.Output != "" && !strings.HasSuffix(r.Output, "\n") {
			lines++
		}
	}
	if bytes == 0 {
		bytes = len(r.Output)
	}
	size := fmt.Sprintf("%s lines, %s bytes, ~%s tokens", group(lines), group(bytes), group(tokens))
	if r.Artifact != "" {
		return fmt.Sprintf("[output of `%s` (%s) dropped to save context — artifact %s; read_artifact %s or rerun the call to see it]", what, size, r.Artifact, r.Artifact)
	}
	id := ResultID(seq)
	return fmt.Sprintf("[output of `%s` (%s) dropped to save context — read_artifact %s shows it as it was; rerun the call for the present]", what, size, id)
}

// ResultID names a tool result by its seq in the log, for read_artifact:
// "r<seq>".
func ResultID(seq int64) string { return fmt.Sprintf("r%d", seq) }

// OutputID is the id read_artifact returns the whole of the tool result
// at seq by: its artifact, else the result as the log keeps it
// (ResultID). An output recorded whole and cut again at assembly (the
// count correction grew since) names it, not "rerun the call": the log
// holds what the model was shown.
func OutputID(r event.ToolResult, seq int64) string {
	if r.Artifact != "" {
		return r.Artifact
	}
	return ResultID(seq)
}

// ClipOutput cuts an output that would take more than limit tokens to
// its head and tail, at line boundaries, with a note in the middle saying
// what was cut and how to get it: read_artifact id, which returns the
// whole (OutputID), or, when id is "" (an output cut before it was
// recorded, with nowhere kept whole), rerunning the call with a narrower
// range. have is the output's token count. The cut is a pure function of
// its inputs, so every assembly cuts alike and the prompt cache holds.
func ClipOutput(c tokens.Counter, out string, have, limit int, id string) string {
	res, _ := clipOutput(c, out, have, limit, id)
	return res
}

// clipOutput is ClipOutput that also returns the cut output's count, or
// -1 when it returned out unchanged without counting it.
func clipOutput(c tokens.Counter, out string, have, limit int, id string) (string, int) {
	if have <= limit || limit <= 0 {
		return out, -1
	}
	note := func(lines, toks int) string {
		how := "rerun the call with a narrower range to see it"
		if id != "" {
			how = fmt.Sprintf("read_artifact %s to see it", id)
		}
		return fmt.Sprintf("\n[… %s lines (~%s tokens) cut here to fit the context window; %s …]\n", group(lines), group(toks), how)
	}
	// Aim below the limit and shrink until the count agrees: bytes per
	// token vary along an output.
	keep := float64(limit) * 0.9 / float64(have)
	for range 8 {
		n := int(keep * float64(len(out)) / 2)
		head := cutAfterLine(out[:n])
		tail := cutBeforeLine(out[len(out)-n:])
		mid := out[len(head) : len(out)-len(tail)]
		res := head + note(strings.Count(mid, "\n"), max(0, have-limit)) + tail
		if got := c.Count(res); got <= limit {
			return res, got
		}
		keep *= 0.8
	}
	res := note(strings.Count(out, "\n"), have)
	return res, c.Count(res)
}

// cutAfterLine shortens a head to its last whole line, unless that loses
// more than half of it (one enormous line).
func cutAfterLine(s string) string {
	s = validPrefix(s)
	if i := strings.LastIndexByte(s, '\n'); i >= len(s)/2 {
		return s[:i+1]
	}
	return s
}

// cutBeforeLine shortens a tail to start at a whole line, likewise.
func cutBeforeLine(s string) string {
	s = validSuffix(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)/2 {
		return s[i+1:]
	}
	return s
}

// validPrefix and validSuffix drop a UTF-8 sequence cut in half.
func validPrefix(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		if s[i] < 0x80 {
			break
		}
		if s[i] >= 0xC0 { // a lead byte: is its sequence complete?
			need := 2
			switch {
			case s[i] >= 0xF0:
				need = 4
			case s[i] >= 0xE0:
				need = 3
			}
			if len(s)-i < need {
				return s[:i]
			}
			break
		}
	}
	return s
}

func validSuffix(s string) string {
	i := 0
	for i < len(s) && i < 4 && s[i] >= 0x80 && s[i] < 0xC0 {
		i++
	}
	return s[i:]
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// group writes n with thousands separators: 1,240.
func group(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
