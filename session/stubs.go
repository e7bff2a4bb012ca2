package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/store"
)

// A live session holds the events before its window's start as stubs
// (log.go). This file says which events become stubs, and reads a long
// log from the store into them without reading the log whole.

// readStubbed reads the log links make up as a live session holds it
// when its window starts after cut: the window whole, and of the events
// through cut what the session reads of them. Their kinds come from the
// store's index of kinds (Store.SeqsByKind), not from the events, whose
// rows hold the payloads: learning them from the events read a long log
// from disk whole (~250 ms of SQLite at 100,000 events of reads). Read
// from the events through cut: the kinds Kept and the prompts, whole
// (but for the prompts stubbable makes stubs, which keep their time and
// count: a rewind dates prompts), and, for the usage correction, the
// model messages and context_assembled events of the latest
// contextwin.RatioCalls model calls the model sees, into stubs holding
// their two numbers. The stubs of the others hold their kind alone.
func (m *Manager) readStubbed(ctx context.Context, links []link, cut int64) ([]event.Event, error) {
	var window []event.Event
	err := m.stream(ctx, links, store.Range{After: cut}, func(b []event.Event) error {
		window = append(window, b...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(window) > 0 && window[0].Seq != cut+1 {
		return nil, fmt.Errorf("the log's window starts at event %d, not %d", window[0].Seq, cut+1)
	}
	events := make([]event.Event, cut, withRoom(int(cut)+len(window)))
	calls, err := m.placeStubs(ctx, links, events)
	if err != nil {
		return nil, err
	}
	// The kinds read whole, and the rewinds among them: what the model
	// sees of the log before cut is what they left.
	var whole []string
	for _, k := range event.Kinds() {
		if k.Facts().Kept || k == event.KindUserMessage {
			whole = append(whole, string(k))
		}
	}
	var rewinds []event.Event
	keep := &stubbable{}
	err = m.eachRecord(ctx, links, store.Range{Through: cut, Kinds: whole}, func(r store.Record) error {
		e := event.Event{Seq: r.Seq, Time: msTime(r.CreatedAt), Tokens: r.Tokens, Payload: events[r.Seq-1].Payload}
		if !keep.record(r) {
			var err error
			if e, err = decodeRecord(r); err != nil {
				return err
			}
		}
		if e.Kind() == event.KindRewound {
			rewinds = append(rewinds, e)
		}
		events[r.Seq-1] = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, e := range window {
		if e.Kind() == event.KindRewound {
			rewinds = append(rewinds, e)
		}
	}
	var stubs slab
	r := store.Range{After: correctionFrom(calls, rewoundRanges(rewinds)), Through: cut, Kinds: []string{string(event.KindAssistantMessage), string(event.KindContextAssembled)}}
	err = m.eachRecord(ctx, links, r, func(r store.Record) error {
		s, err := event.ReadStub(event.Kind(r.Kind), r.Payload)
		if err != nil {
			return fmt.Errorf("event %d: %w", r.Seq, err)
		}
		events[r.Seq-1] = event.Event{Seq: r.Seq, Time: msTime(r.CreatedAt), Tokens: r.Tokens, Payload: stubs.add(s)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append(events, window...), nil
}

// correctionFrom is the seq after which the model messages (of seqs
// calls, in order) and the requests before them hold the latest
// contextwin.RatioCalls calls the model sees, that is, not in ranges (a
// rewind went back over them): the usage correction reads those alone.
func correctionFrom(calls []int64, ranges [][2]int64) int64 {
	seen := 0
	for i := len(calls) - 1; i >= 0; i-- {
		if inRanges(ranges, calls[i]) {
			continue
		}
		if seen++; seen > contextwin.RatioCalls {
			return calls[i]
		}
	}
	return 0
}

// placeStubs fills events, the log's first len(events) events, with the
// stubs of their kinds read from the store's index of kinds, and returns
// the seqs of its model messages.
func (m *Manager) placeStubs(ctx context.Context, links []link, events []event.Event) ([]int64, error) {
	cut := int64(len(events))
	var calls []int64
	placed := int64(0)
	for _, l := range links {
		through := cut
		if l.through > 0 && l.through < through {
			through = l.through
		}
		kinds, err := m.cfg.Store.SeqsByKind(ctx, l.id, 0, through)
		if err != nil {
			return nil, err
		}
		for kind, seqs := range kinds {
			stub, err := event.BareStub(event.Kind(kind))
			if err != nil {
				return nil, fmt.Errorf("event %d: %w", seqs[0], err)
			}
			for _, seq := range seqs {
				if seq < 1 || seq > cut || events[seq-1].Payload != nil {
					return nil, fmt.Errorf("the log's events through %d are not numbered 1 to %d: %d is out of place", cut, cut, seq)
				}
				events[seq-1] = event.Event{Seq: seq, Payload: stub}
			}
			placed += int64(len(seqs))
			if kind == string(event.KindAssistantMessage) {
				// The links are in log order: their calls are too.
				calls = append(calls, seqs...)
			}
		}
	}
	if placed != cut {
		return nil, fmt.Errorf("the log's events through %d are not numbered 1 to %d: %d of them found", cut, cut, placed)
	}
	return calls, nil
}

// stubbable says, in log order, which events before the window's start
// become stubs: all but the kinds Kept and the first prompt the model
// sees (every request shows it). A rewind that went back over that prompt
// makes the next prompt the first: it is kept too (should the rewind be
// undone, the first one is first again, and was kept).
type stubbable struct {
	prompt int64 // the seq of the prompt kept last
	next   bool  // the next prompt is kept
	begun  bool
}

func (k *stubbable) event(kind event.Kind, seq int64, rewound func() (event.Rewound, bool)) bool {
	if !k.begun {
		k.begun, k.next = true, true
	}
	switch {
	case kind == event.KindRewound:
		if r, ok := rewound(); ok && r.Undoes == 0 && r.From <= k.prompt {
			k.next = true
		}
		return false
	case kind.Facts().Kept:
		return false
	case kind == event.KindUserMessage && k.next:
		k.next, k.prompt = false, seq
		return false
	}
	return true
}

// record is event for a stored record.
func (k *stubbable) record(r store.Record) bool {
	return k.event(event.Kind(r.Kind), r.Seq, func() (event.Rewound, bool) {
		var v event.Rewound
		return v, json.Unmarshal(r.Payload, &v) == nil
	})
}

// stubbed returns the log with its events through cut made stubs, but
// for those stubbable keeps. The log is copied: a view may hold it.
func stubbed(events []event.Event, cut int64) []event.Event {
	out := append(make([]event.Event, 0, withRoom(len(events))), events...)
	var stubs slab
	keep := &stubbable{}
	for i, e := range out {
		if e.Seq > cut {
			break
		}
		stub := keep.event(e.Kind(), e.Seq, func() (event.Rewound, bool) {
			r, ok := e.Payload.(event.Rewound)
			return r, ok
		})
		if _, already := e.Payload.(*event.Stub); !stub || already {
			continue
		}
		if st := event.StubOf(e.Payload); st.Reported != 0 || st.Raw != 0 {
			out[i].Payload = stubs.add(st)
		} else {
			out[i].Payload, _ = event.BareStub(e.Kind())
		}
	}
	return out
}

// slab allocates stubs a few hundred at a time: one allocation each
// would cost more than the stub.
type slab []event.Stub

func (b *slab) add(s event.Stub) *event.Stub {
	if len(*b) == cap(*b) {
		*b = make([]event.Stub, 0, 256)
	}
	*b = append(*b, s)
	return &(*b)[len(*b)-1]
}
