package contextwin

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
)

// stubbed is events as a session holds them: through the latest
// compaction's Through, stubs, but for the kinds Kept and the first
// prompt.
func stubbed(events []event.Event) []event.Event {
	var cut int64
	for _, e := range events {
		if c, ok := e.Payload.(event.Compaction); ok {
			cut = c.Through
		}
	}
	out := make([]event.Event, len(events))
	first := true
	for i, e := range events {
		out[i] = e
		kind := e.Kind()
		if kind == event.KindUserMessage && first {
			first = false
			continue
		}
		if e.Seq <= cut && !kind.Facts().Kept {
			s := event.StubOf(e.Payload)
			out[i].Payload = &s
		}
	}
	return out
}

// stored reads the stubs of events from whole, as a session reads them
// from the store.
func stored(whole []event.Event) func(after, through int64, kinds []event.Kind, fn func(event.Event) error) error {
	return func(after, through int64, kinds []event.Kind, fn func(event.Event) error) error {
		for _, e := range whole {
			if e.Seq > after && e.Seq <= through {
				if err := fn(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// planView is what a plan tells the summarizer and the editor.
func planView(p *CompactionPlan) string {
	if p == nil {
		return "no plan"
	}
	var reqs []string
	for k := range p.Chunks() {
		reqs = append(reqs, requestText(p.Request(k)))
	}
	c := p.Result([]string{`{"goal":"g"}`})
	b, _ := json.Marshal(c)
	return fmt.Sprintf("through %d, %d events, %d tokens\n%q\n%s", p.Through, p.Events, p.Tokens, reqs, b)
}

// A log whose events before the window's start are stubs assembles the
// same requests, and plans the same compactions, as the whole log: from
// scratch, and with the session's Memo, which read the events whole
// before they became stubs and keeps the last plan's fold (here through
// several compactions, outputs dropped and read again by their address,
// calls naming paths and commands, artifacts).
func TestAStubbedLogAssemblesAndPlansAsTheWholeLog(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("port the parser")
	compactions := 0
	for i := 0; compactions < 4; i++ {
		if i > 200 {
			t.Fatalf("%d compactions in 200 rounds", compactions)
		}
		l.tool("run", fmt.Sprintf(`{"command":"go test ./p%d"}`, i%7), lines(20+i%30, fmt.Sprintf("out%d", i)), fmt.Sprintf("a%d.0", i))
		l.tool("read", fmt.Sprintf(`{"path":"src/f%d.go"}`, i%11), lines(10, "src"), "")
		l.answer(lines(5, "notes"))
		if i%3 == 0 {
			l.prompt(fmt.Sprintf("next %d", i))
		}
		a := l.assemble()
		if !a.Compact {
			continue
		}
		whole := l.input()
		want, err := l.w.PlanCompaction(whole)
		if err != nil {
			t.Fatal(err)
		}
		// The session's: its Memo, the log stubbed through the window's
		// start, the stubs read back from the store.
		in := l.input()
		in.Events, in.Stored, in.Memo = stubbed(l.events), stored(l.events), &l.memo
		got, err := l.w.PlanCompaction(in)
		if err != nil {
			t.Fatal(err)
		}
		if planView(got) != planView(want) {
			t.Fatalf("compaction %d planned on stubs:\n%s\nwant:\n%s", compactions+1, planView(got), planView(want))
		}
		// A new Memo, as after a restart: stubs from the start.
		in.Memo = &Memo{}
		if fresh, err := l.w.PlanCompaction(in); err != nil || planView(fresh) != planView(want) {
			t.Fatalf("compaction %d planned on stubs with a new Memo (%v):\n%s\nwant:\n%s", compactions+1, err, planView(fresh), planView(want))
		}
		if want == nil {
			continue
		}
		l.add(want.Result([]string{fmt.Sprintf(`{"goal":"round %d","handles":["path x%d.go"]}`, i, i)}))
		compactions++
		// The next request, on the stubbed log, with and without the Memo.
		ref, err := l.w.Assemble(l.input())
		if err != nil {
			t.Fatal(err)
		}
		for _, memo := range []*Memo{&l.memo, {}} {
			in := l.input()
			in.Events, in.Memo = stubbed(l.events), memo
			got, err := l.w.Assemble(in)
			if err != nil || !reflect.DeepEqual(got, ref) {
				t.Fatalf("after compaction %d, assembled on stubs (%v):\n%+v\nwant:\n%+v", compactions, err, got, ref)
			}
		}
	}
}

// The scan of a log reads what the stubs keep as the events themselves:
// the usage correction (every reported usage against the raw count of the
// request before it), the first prompt, the pins.
func TestTheScanReadsStubsAsTheEvents(t *testing.T) {
	l := newLog(t, config.Context{}, config.ModelSpec{Window: 8_000, MaxOutput: 1_000, Tokenizer: "estimate"})
	l.prompt("first")
	l.add(event.ConstraintPinned{Text: "no cgo", Source: "user"})
	for i := range 6 {
		l.add(event.ContextAssembled{Raw: 1000 + 100*i, Action: ActionNone})
		l.add(event.AssistantMessage{Text: "x", Usage: event.Usage{InputTokens: 900 + 50*i, CacheReadTokens: 200}})
		l.prompt(fmt.Sprintf("p%d", i))
	}
	l.add(event.Compaction{Through: int64(len(l.events)), Goal: "g", Decisions: []string{"use yacc"}})
	whole, stubs := scan(l.events), scan(stubbed(l.events))
	if whole.ratio != stubs.ratio || !whole.measured || whole.first.Seq != stubs.first.Seq ||
		!reflect.DeepEqual(whole.pins, stubs.pins) || whole.compactionSeq != stubs.compactionSeq {
		t.Fatalf("scanned from stubs: ratio %v, first %d, pins %+v; whole: ratio %v, first %d, pins %+v",
			stubs.ratio, stubs.first.Seq, stubs.pins, whole.ratio, whole.first.Seq, whole.pins)
	}
}

// The usage correction follows the latest RatioCalls model calls, and
// only them: a session loaded from the store reads no older call's
// usage, and must correct its counts exactly as the live session did.
func TestTheCorrectionFollowsTheLatestCalls(t *testing.T) {
	// log makes 100 model calls, the request before call i of raw
	// count 1,000 and its reported input reported(i).
	log := func(reported func(i int) int) []event.Event {
		var events []event.Event
		add := func(p event.Payload) {
			events = append(events, event.Event{Seq: int64(len(events) + 1), Payload: p})
		}
		for i := range 100 {
			add(event.ContextAssembled{Raw: 1_000})
			add(event.AssistantMessage{Text: "ok", Usage: event.Usage{InputTokens: reported(i)}})
		}
		return events
	}
	varied := func(i int) int { return 1_000 + 7*i + (i%5)*40 }
	whole := scan(log(varied)).ratio
	cases := []struct {
		name     string
		reported func(i int) int
		same     bool
	}{
		{"the older calls' usage unread (0), as a loaded session reads it", func(i int) int {
			if i < 100-RatioCalls {
				return 0
			}
			return varied(i)
		}, true},
		{"the older calls reporting wildly", func(i int) int {
			if i < 100-RatioCalls {
				return 9_000
			}
			return varied(i)
		}, true},
		{"a recent call reporting otherwise", func(i int) int {
			if i == 90 {
				return 2_900
			}
			return varied(i)
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := scan(log(c.reported)).ratio; (got == whole) != c.same {
				t.Fatalf("ratio %v, the whole log's %v: same = %v, want %v", got, whole, got == whole, c.same)
			}
		})
	}
	// Where the calls followed begin: the only call reporting usage is
	// the oldest followed, or the one before it.
	only := func(at int) func(int) int {
		return func(i int) int {
			if i == at {
				return 1_500
			}
			return 0
		}
	}
	if st := scan(log(only(100 - RatioCalls))); !st.measured || st.ratio != 1.5 {
		t.Fatalf("the oldest call followed alone reported: measured %v ratio %v, want 1.5", st.measured, st.ratio)
	}
	if st := scan(log(only(100 - RatioCalls - 1))); st.measured || st.ratio != 1 {
		t.Fatalf("a call before those followed alone reported: measured %v ratio %v, want none (1)", st.measured, st.ratio)
	}
	// The stubs a compaction leaves are read as the events were.
	events := log(varied)
	for i := range events[:100] {
		s := event.StubOf(events[i].Payload)
		events[i].Payload = &s
	}
	if got := scan(events).ratio; got != whole {
		t.Fatalf("ratio read through stubs %v, whole %v", got, whole)
	}
}
