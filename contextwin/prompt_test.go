package contextwin

import (
	"errors"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
)

func userMessage(text string) event.UserMessage {
	return event.UserMessage{Content: []event.Content{{Type: "text", Text: text}}}
}

func TestCheckPromptRefusesWhatCanNeverFitAndSaysHowBig(t *testing.T) {
	for _, m := range []config.ModelSpec{small, {Window: 8_000, MaxOutput: 1_000}} {
		t.Run("tokenizer "+m.Tokenizer, func(t *testing.T) {
			l := newLog(t, config.Context{}, m)
			l.prompt("Fix the flaky test in store/.")
			l.answer("Looking.")
			calls := 0
			input := func() Input { calls++; return l.input() }

			// Small prompts are not looked at further.
			if err := l.w.CheckPrompt(l.spec, userMessage("and the other one"), input); err != nil || calls != 0 {
				t.Fatalf("a small prompt: err %v, input called %d times", err, calls)
			}
			// A large one that fits next to the session passes.
			if err := l.w.CheckPrompt(l.spec, userMessage(lines(200, "log")), input); err != nil {
				t.Fatalf("a prompt that fits: %v", err)
			}
			// One that does not is refused with its size and the room.
			big := lines(800, "huge prompt")
			err := l.w.CheckPrompt(l.spec, userMessage(big), input)
			var pe *PromptTooBigError
			if !errors.As(err, &pe) || !errors.Is(err, ErrPromptTooBig) {
				t.Fatalf("err = %v, want a PromptTooBigError", err)
			}
			lim := l.w.Limits(l.spec)
			if pe.FromSize || pe.Tokens < 8_000 || pe.Room <= 0 || pe.Room >= pe.Limit || pe.Limit > lim.Input || pe.Window != 8_000 || pe.Reserve != 1_000 {
				t.Fatalf("refusal numbers: %+v", pe)
			}
			for _, says := range []string{group(pe.Tokens) + " tokens", group(pe.Limit), "resource_link", "read_file", "Nothing was recorded"} {
				if !strings.Contains(err.Error(), says) {
					t.Errorf("the refusal does not say %q: %v", says, err)
				}
			}
			// The same as a pin: it would be in every request.
			if err := l.w.CheckPrompt(l.spec, event.ConstraintPinned{Text: big}, input); !errors.As(err, &pe) {
				t.Fatalf("a huge pin: err = %v", err)
			}
			// Far too large to count: refused from its size.
			calls = 0
			huge := strings.Repeat("x", 8*lim.Input+1)
			if err := l.w.CheckPrompt(l.spec, userMessage(huge), input); !errors.As(err, &pe) || !pe.FromSize || pe.Tokens != (len(huge)+3)/4 {
				t.Fatalf("a huge prompt: err = %v (%+v)", err, pe)
			}
		})
	}
}

func TestCheckPromptCountsTheFirstRequestAndPinsAgainstLaterPrompts(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	// The first request stays in every request: a later prompt must fit
	// next to it.
	l.prompt(lines(300, "first"))
	l.answer("ok")
	input := func() Input { return l.input() }
	if err := l.w.CheckPrompt(l.spec, userMessage(lines(300, "second")), input); !errors.Is(err, ErrPromptTooBig) {
		t.Fatalf("a second prompt as large as the first: err = %v", err)
	}
	if err := l.w.CheckPrompt(l.spec, userMessage(lines(60, "second")), input); err != nil {
		t.Fatalf("a second prompt that fits: %v", err)
	}
	// A pin in a session with no prompt yet.
	l = newLog(t, config.Context{}, small)
	if err := l.w.CheckPrompt(l.spec, event.DecisionRecorded{Text: lines(800, "decision")}, func() Input { return l.input() }); !errors.Is(err, ErrPromptTooBig) {
		t.Fatalf("a huge pin before any prompt: err = %v", err)
	}
}

// BenchmarkCheckPromptHuge: a 60 MB prompt is refused from its size; no
// pass over its text, no copy of it.
func BenchmarkCheckPromptHuge(b *testing.B) {
	w, _ := New(config.Context{}, func(string) config.ModelSpec {
		return config.ModelSpec{Window: 200_000, MaxOutput: 8_192, Tokenizer: "o200k_base"}
	})
	events := []event.Event{{Seq: 1, Payload: event.SessionStarted{Model: "m"}}}
	huge := userMessage(strings.Repeat("0123456789 abcdef, ", (60<<20)/19))
	input := func() Input { return Input{Spec: "m", Model: "m", System: "system", Tools: testTools, Events: events} }
	b.ReportAllocs()
	for b.Loop() {
		if err := w.CheckPrompt("m", huge, input); !errors.Is(err, ErrPromptTooBig) {
			b.Fatal(err)
		}
	}
}

// TestCheckPromptLeavesTheMemoAlone weighs a prompt with the session's
// Memo in the input, then appends another prompt at the seq the weighed
// one had: the next assembly must see the prompt the log got.
func TestCheckPromptLeavesTheMemoAlone(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("the task")
	l.assemble()
	// Large enough to be weighed by assembling, small enough to fit.
	weighed := event.UserMessage{Content: []event.Content{{Type: "text", Text: "a prompt never sent\n" + lines(60, "weighed")}}}
	if err := l.w.CheckPrompt(l.spec, weighed, func() Input {
		in := l.input()
		in.Memo = &l.memo
		return in
	}); err != nil {
		t.Fatal(err)
	}
	l.prompt("the prompt sent")
	if text := requestText(l.assemble().Request); strings.Contains(text, "never sent") || !strings.Contains(text, "the prompt sent") {
		t.Fatalf("the request after a weighed prompt:\n%s", text)
	}
}
