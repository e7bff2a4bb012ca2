package contextwin

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bridle-dev/bridle/event"
)

// ErrPromptTooBig is wrapped by CheckPrompt's refusal: the prompt cannot
// fit the model's window next to what every request of the session
// carries, so recording it would leave a session whose every later
// request fails the same way.
var ErrPromptTooBig = errors.New("the prompt does not fit the model's context window")

// PromptTooBigError is ErrPromptTooBig with its numbers, in tokens.
type PromptTooBigError struct {
	Spec string
	// Bytes is the prompt's size. Tokens is what it would take of the
	// window: counted, or, when FromSize, estimated from Bytes alone
	// because the prompt is far too large to be worth counting.
	Bytes, Tokens int
	FromSize      bool
	// Room is the most a prompt may take now: Limit less what every
	// request of this session carries (the system prompt, the tools, the
	// project's instructions, the first request, the pins and the history
	// that cannot be dropped). It is 0 or less when nothing more fits.
	Room int
	// Limit is the window's budget for one request: Window less Reserve
	// (kept for the answer) and, for an estimated count, less the
	// estimate's margin.
	Limit, Window, Reserve int
	// Estimated says the counts are estimates (no exact tokenizer for
	// the model), so Limit keeps a margin.
	Estimated bool
}

func (e *PromptTooBigError) Error() string { return ErrPromptTooBig.Error() + ": " + e.Detail() }

func (e *PromptTooBigError) Unwrap() error { return ErrPromptTooBig }

// Detail says how large the prompt is, what the window has room for, and
// how to give the agent large content instead.
func (e *PromptTooBigError) Detail() string {
	size := fmt.Sprintf("about %s tokens (counted", group(e.Tokens))
	if e.Estimated {
		size = fmt.Sprintf("about %s tokens (estimated", group(e.Tokens))
	}
	if e.FromSize {
		size = fmt.Sprintf("about %s tokens (estimated from its size", group(e.Tokens))
	}
	size += ", " + bytesText(e.Bytes) + ")"
	margin := ""
	if e.Estimated {
		margin = fmt.Sprintf(" and %d %% for the estimate's margin", int(uncertainty*100))
	}
	budget := fmt.Sprintf("%s's %s-token window allows %s tokens per request (%s are kept for the answer%s)",
		e.Spec, group(e.Window), group(e.Limit), group(e.Reserve), margin)
	room := fmt.Sprintf("at most %s fit", group(max(e.Room, 0)))
	if e.Room <= 0 {
		room = "nothing more fits"
	}
	if taken := e.Limit - e.Room; taken > 0 {
		room += fmt.Sprintf(" next to the %s this session's requests always carry (system prompt, tools, project instructions, first request, pins, recent history)", group(taken))
	}
	return fmt.Sprintf("it is %s and %s: %s. Nothing was recorded; the session is unchanged. "+
		"To give the agent large content, save it as a file in the workspace and ask the agent to read it (read_file reads long files in parts), "+
		"or attach the file as a resource_link instead of pasting its text",
		size, room, budget)
}

func bytesText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Bounds of the cheap look at a prompt's size, before anything counts it.
const (
	// maxBytesPerToken is more bytes than a token of ordinary text ever
	// holds: prose and code take 3–6 bytes a token in the encodings
	// models use (o200k_base, cl100k_base) and in the estimate. A prompt
	// with more bytes than this many for each token of the budget is
	// refused from its size alone: counting 60 MB would take seconds and
	// hundreds of megabytes only to learn the same.
	maxBytesPerToken = 8
	// typicalBytesPerToken turns a size into the estimate the refusal
	// shows.
	typicalBytesPerToken = 4
	// smallPrompt: a prompt of at most this share of the input budget
	// (in bytes, so in tokens too: a token holds at least a byte) is not
	// checked against the session; if the session is already too full
	// for it, that is not the prompt's doing, and assembly says so.
	smallPrompt = 0.05
)

// CheckPrompt decides, before a prompt is recorded, whether the model can
// ever be sent it. p is the prompt as it would be appended (a
// user_message, or the pin of /constraint or /decision); input returns the
// session as it is, and is called only for a prompt large enough for the
// session's content to matter. The refusal is a *PromptTooBigError.
//
// The size is looked at first, without counting: a prompt too large to be
// worth counting is refused in microseconds. Otherwise the prompt is
// counted and a request is assembled with it appended, as the next model
// call would; if that cannot fit (ErrTooBig), the prompt is refused.
func (w *Window) CheckPrompt(spec string, p event.Payload, input func() Input) error {
	size := payloadSize(p)
	m := w.Model(spec)
	b := w.budget(m)
	c := w.Counter(spec)
	limit := b.input
	if !c.Exact() {
		limit = int(float64(b.input) / (1 + uncertainty))
	}
	if float64(size) <= smallPrompt*float64(b.input) {
		return nil
	}
	refuse := &PromptTooBigError{Spec: spec, Bytes: size, Limit: limit, Window: b.window, Reserve: b.reserve, Estimated: !c.Exact()}
	in := input()
	if size > maxBytesPerToken*limit {
		refuse.Tokens, refuse.FromSize = (size+typicalBytesPerToken-1)/typicalBytesPerToken, true
		// What the session takes without the prompt, for the message.
		refuse.Room = limit
		if a, err := w.Assemble(withPrompt(in, emptyLike(p), partOverhead)); err == nil {
			refuse.Room = limit - a.Used()
		} else if tb := (*TooBigError)(nil); errors.As(err, &tb) {
			refuse.Room = limit - tb.Needs
		}
		return refuse
	}
	n := w.countFor(spec, p)
	_, err := w.Assemble(withPrompt(in, p, n))
	var tb *TooBigError
	if !errors.As(err, &tb) {
		// It fits; or assembly fails for a reason of its own, which the
		// turn reports as it would have.
		return nil
	}
	refuse.Tokens = int(float64(n)*tb.Ratio + 0.999)
	refuse.Room = limit - (tb.Needs - refuse.Tokens)
	return refuse
}

// withPrompt returns in with p appended as the next event, counted n. A
// pin in a session without a prompt yet gets an empty first request, as
// assembly needs one.
func withPrompt(in Input, p event.Payload, n int) Input {
	evs := slices.Clip(in.Events)
	var seq int64
	if len(evs) > 0 {
		seq = evs[len(evs)-1].Seq
	}
	if _, ok := p.(event.UserMessage); !ok && !slices.ContainsFunc(evs, func(e event.Event) bool { return e.Kind() == event.KindUserMessage }) {
		seq++
		evs = append(evs, event.Event{Seq: seq, Payload: event.UserMessage{Content: []event.Content{{Type: "text"}}}, Tokens: partOverhead})
	}
	in.Events = append(evs, event.Event{Seq: seq + 1, Payload: p, Tokens: n})
	// A log that may never be: the session's Memo must not read it, or it
	// would take the prompt for the one the log then gets at that seq.
	in.Memo = nil
	return in
}

// emptyLike is a prompt of p's kind without its text.
func emptyLike(p event.Payload) event.Payload {
	switch p.(type) {
	case event.ConstraintPinned, event.DecisionRecorded:
		return event.DecisionRecorded{}
	}
	return event.UserMessage{Content: []event.Content{{Type: "text"}}}
}

// payloadSize is a prompt's size in bytes, without rendering it.
func payloadSize(p event.Payload) int {
	switch v := p.(type) {
	case event.UserMessage:
		n := 0
		for _, c := range v.Content {
			n += len(c.Text) + len(c.URI) + len(c.Name) + len(c.MimeType) + len(c.Data)
		}
		return n
	case event.ConstraintPinned:
		return len(v.Text)
	case event.DecisionRecorded:
		return len(v.Text)
	}
	return 0
}
