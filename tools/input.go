package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// callMemo is what one call's Env remembers between Preview, Plan and Run of
// that call: its input validated and decoded once, an edit planned once.
// It remembers one input: a different one (a caller reusing the Env) is
// validated and decoded afresh.
type callMemo struct {
	mu        sync.Mutex
	tool      string
	input     []byte
	validated bool
	value     any // the decoded input, once decoded
	plan      any // an edit's plan, once planned
}

// ForCall returns a copy of e for one call with key. Within it, a built-in
// tool validates and decodes the call's input once, and an edit is
// planned once, however many of Preview, Plan and Run the session asks
// for.
func (e *Env) ForCall(key string) *Env {
	c := *e
	c.Key = key
	c.call = &callMemo{}
	return &c
}

// same locks the call's memory and reports whether it is about this tool
// and input; if not, it is reset to them.
func (c *callMemo) same(tool string, input json.RawMessage) bool {
	if c.tool == tool && bytes.Equal(c.input, input) {
		return true
	}
	c.tool, c.input = tool, bytes.Clone(input)
	c.validated, c.value, c.plan = false, nil, nil
	return false
}

// markValidated records that input was validated against tool's schema.
func (e *Env) markValidated(tool string, input json.RawMessage) {
	if e == nil || e.call == nil {
		return
	}
	e.call.mu.Lock()
	defer e.call.mu.Unlock()
	e.call.same(tool, input)
	e.call.validated = true
}

// parseInput validates a call's arguments against the tool's schema and
// decodes them — once per call: with an Env from ForCall, later calls
// return the first one's value, and a validation Registry.CheckCall made
// is not repeated.
func parseInput[T any](env *Env, tool string, sch *inputSchema, input json.RawMessage) (T, error) {
	input = orEmpty(input)
	var c *callMemo
	if env != nil && env.call != nil {
		c = env.call
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.same(tool, input) {
			if v, ok := c.value.(T); ok {
				return v, nil
			}
		}
	}
	var in T
	if c == nil || !c.validated {
		if err := sch.validate(tool, input); err != nil {
			return in, err
		}
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return in, fmt.Errorf("%s: the arguments do not match its schema: %v", tool, err)
	}
	if c != nil {
		c.validated, c.value = true, in
	}
	return in, nil
}

// memoPlan returns the plan remembered for this call, or computes it with
// plan and remembers it. fresh reads the file(s) again and says whether a
// remembered plan still holds (the text did not change since), where it
// read the text that changed, or why it could not read it; writing is
// set by Run, which writes the plan it gets.
//
// On disk a remembered plan is checked each time and, with again, made
// again when the file changed: a read is cheap, and an edit's plan made
// again is the same replacement. A plan that could come out otherwise
// (a rename: the server, asked again, may change other files than the
// user approved) is not made again but refused (changedSincePlanned). Through
// the editor each check is a question to it, so a plan is checked once,
// by Run, right before it is written; one that no longer holds is
// refused (errBufferChanged, or errDiskChanged when the check read the
// disk: a command runs in the background), never made again on text the
// model has not seen. The first plan of a call that Run will check may
// start from the text bridle last had from the buffer (hint; see
// BufferTexts); Run without a plan of its call plans on the editor's
// answer.
func memoPlan[P any](env *Env, tool string, input json.RawMessage, writing, again bool, fresh func(P) (bool, textSource, error), plan func(hint bool) (P, error)) (P, error) {
	if env == nil || env.call == nil {
		return plan(false)
	}
	buffers := env.usesEditor()
	c := env.call
	c.mu.Lock()
	if c.tool == tool && bytes.Equal(c.input, orEmpty(input)) {
		if p, ok := c.plan.(P); ok {
			c.mu.Unlock()
			if buffers && !writing {
				return p, nil
			}
			holds, from, err := fresh(p)
			refuse := buffers || !again
			var zero P
			switch {
			case holds && err == nil:
				return p, nil
			case refuse && err != nil:
				return zero, fmt.Errorf("%s: %w", tool, err)
			case refuse:
				return zero, changedSincePlanned(from)
			}
			// On disk, plan again: it reads the file anew, and says why
			// when it cannot.
			c.mu.Lock()
		}
	}
	c.mu.Unlock()
	p, err := plan(buffers && !writing)
	if err != nil {
		return p, err
	}
	c.mu.Lock()
	if c.tool == tool && bytes.Equal(c.input, orEmpty(input)) {
		c.plan = p
	}
	c.mu.Unlock()
	return p, nil
}

// errBufferChanged refuses an edit whose file's buffer no longer holds
// the text the edit was planned on.
var errBufferChanged = errors.New("the editor's buffer changed since this edit was planned on it (unsaved changes, or a reload): nothing was changed; read the file again and redo the edit")

// errDiskChanged refuses an edit whose file no longer holds, on disk, the
// text the edit was planned on, when the editor's buffers are used: the
// check before the write read the disk because a command runs in the
// background. The command may have written the file, or the edit was
// planned on the buffer, whose unsaved text the disk lacks.
var errDiskChanged = errors.New("the file on disk does not hold the text this edit was planned on: a command runs in the background, so the file was read on disk, not in the editor's buffer, and the command may have changed it, or the edit was planned on the buffer's unsaved text: nothing was changed; read the file again and redo the edit")

// errFileGone refuses an edit whose file was removed since it was planned.
var errFileGone = errors.New("the file was removed since this edit was planned: nothing was changed; read the file again and redo the edit")

// changedSincePlanned is why a remembered plan is refused: the text,
// where the check read it (from), is not the planned-on text.
func changedSincePlanned(from textSource) error {
	switch from {
	case fromDisk:
		return errDiskChanged
	case fromEditor:
		return errBufferChanged
	}
	return errFileGone // readFileText found no file
}

// isChangedSincePlanned says whether err is memoPlan's refusal of a plan
// whose text changed.
func isChangedSincePlanned(err error) bool {
	return errors.Is(err, errBufferChanged) || errors.Is(err, errDiskChanged) || errors.Is(err, errFileGone)
}

func orEmpty(input json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(input)) == 0 {
		return json.RawMessage("{}")
	}
	return input
}
