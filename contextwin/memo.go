package contextwin

import (
	"sync"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/tokens"
)

// Memo carries what one assembly of a session's log learned to the next,
// so that each model call reads only the events appended since the last
// one, not the whole log: the log state (pins, dropped outputs, the calls
// results answer, the usage ratio), and the projection of the window with
// its turn starts and token sums. A session keeps one Memo and passes it
// in every Input; nil assembles from scratch.
//
// The log it is given must extend the one it read last: a log that is
// shorter, or whose event at the last position read has another seq, is
// read again from the start. A caller whose log may have lost events and
// then gained others with the same seqs (a commit that failed) must Reset
// it, and a log that may never be (CheckPrompt's, with the prompt it
// weighs) must not be given with it. A Memo serves one assembly at a time, and the messages of a request
// assembled with it are valid until the next assembly with it: the
// request's slice is reused, so that a call copies only the messages that
// changed, not the whole conversation.
type Memo struct {
	mu sync.Mutex
	// n events were read, the last with seq last.
	n    int
	last int64
	sc   *scanner
	view *memoView
	// addr caches what each dropped output's address costs, for the
	// counter named addrCounter: a long session has thousands.
	addr        map[int64]int
	addrCounter string
	// fold is what the last compaction's plan read of the log.
	fold *planFold
}

// addressCost is what result e costs once dropped: its address, counted
// once per event and counter.
func (m *Memo) addressCost(w *Window, c tokens.Counter, e event.Event, call event.ToolCall) int {
	if m.addr == nil || m.addrCounter != c.Name() {
		m.addr, m.addrCounter = map[int64]int{}, c.Name()
	}
	if n, ok := m.addr[e.Seq]; ok {
		return n
	}
	n := w.countShort(c, Address(e.Payload.(event.ToolResult), e.Seq, call, e.Tokens)) + 2*partOverhead
	m.addr[e.Seq] = n
	return n
}

// Ratio is the correction of estimated counts in the log the Memo read
// (reported usage over estimate; 1 until a provider reported usage, when
// an assembly applies Input.SeedRatio instead: see Measured).
func (m *Memo) Ratio() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sc == nil {
		return 1
	}
	return clampRatio(m.sc.st.ratio)
}

// Measured says whether a provider reported usage in the log the Memo
// read, so that Ratio is this session's own.
func (m *Memo) Measured() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sc != nil && m.sc.st.ratio > 0
}

// Reset forgets everything read: the next assembly reads the whole log.
func (m *Memo) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n, m.last, m.sc, m.view, m.addr, m.fold = 0, 0, nil, nil, nil, nil
}

// memoView is the projection of the window, valid while the model, the
// window's start (cut) and the outputs dropped stay what they were when
// it was begun: each would change how earlier events render.
type memoView struct {
	spec  string
	cut   int64
	drops int
	// per is the per-output cap the outputs were clipped to.
	per int
	// from is the index in the log where the window starts; read is how
	// far the projection has read.
	from, read int
	p          projector
	// history is the raw tokens of the projected events other than tool
	// results; starts the turns' starts, as indexes from from.
	history  int
	starts   []int
	prevUser bool
	// out is the last request's messages: the head, then the projection
	// (p.msgs) from synced on copied in, then what that request added.
	// The next request reuses it, copying only what changed since: the
	// projection's messages after the last one copied, that one again (it
	// may have grown), and the one the cache mark was set on.
	out            []provider.Message
	synced, cached int
	// outputs is what the results shown cost as the log left them: the
	// dropped ones their address, the others their tokens up to the
	// per-output cap.
	outputs int
}

// read brings the log state up to date with events.
func (m *Memo) read(events []event.Event) logState {
	if m.sc == nil || m.n > len(events) || (m.n > 0 && events[m.n-1].Seq != m.last) {
		m.n, m.last, m.sc, m.view, m.addr, m.fold = 0, 0, newScanner(), nil, nil, nil
	}
	for i := m.n; i < len(events); i++ {
		m.sc.add(&events[i])
	}
	m.n = len(events)
	if m.n > 0 {
		m.last = events[m.n-1].Seq
	}
	return m.sc.state()
}

// project brings the window's projection up to date with events, from
// the first event after cut. Outputs render as the request will show
// them: dropped ones as their address, others clipped to perOutput.
func (m *Memo) project(w *Window, spec string, c tokens.Counter, perOutput int, cut int64, events []event.Event) *memoView {
	st := &m.sc.st
	v := m.view
	if v == nil || v.spec != spec || v.cut != cut || v.drops != len(st.dropped) || v.per != perOutput || v.read > len(events) {
		from := len(events)
		for i, e := range events {
			if e.Seq > cut {
				from = i
				break
			}
		}
		v = &memoView{spec: spec, cut: cut, drops: len(st.dropped), per: perOutput, from: from, read: from}
		dropped, calls := st.dropped, st.calls
		v.p.output = func(e event.Event, r event.ToolResult) string {
			if dropped[e.Seq] {
				return Address(r, e.Seq, calls[e.Seq], e.Tokens)
			}
			return ClipOutput(c, r.Output, e.Tokens, perOutput, OutputID(r, e.Seq))
		}
		m.view = v
	}
	for i := v.read; i < len(events); i++ {
		e := events[i]
		shown := len(v.p.shown)
		v.p.add(e)
		if len(v.p.shown) > shown {
			if st.dropped[e.Seq] {
				v.outputs += m.addressCost(w, c, e, st.calls[e.Seq])
			} else {
				v.outputs += min(e.Tokens, perOutput)
			}
		}
		if projected(e) && e.Kind() != event.KindToolResult {
			v.history += e.Tokens
		}
		switch e.Payload.(type) {
		case event.UserMessage:
			v.starts = append(v.starts, i-v.from)
			v.prevUser = true
		case event.AssistantMessage, event.Interrupted:
			if !v.prevUser {
				v.starts = append(v.starts, i-v.from)
			}
			v.prevUser = false
		}
	}
	v.read = len(events)
	return v
}

// request returns the messages of a request: first (the head, with the
// projection's first message joined to it when merged), then the
// projection. It reuses the last request's slice, so a request's messages
// are valid until the next assembly with the same Memo.
func (v *memoView) request(first provider.Message, merged bool) []provider.Message {
	body := v.p.msgs
	off := 1 // out's index of body[0]
	if merged {
		off = 0
	}
	n := off + len(body)
	if cap(v.out) < n {
		grown := make([]provider.Message, len(v.out), n+n/4+8)
		copy(grown, v.out)
		v.out = grown
	}
	out := v.out[:n]
	from := max(v.synced-1, 0)
	if v.synced == 0 {
		from = 0
	}
	for i := from; i < len(body); i++ {
		out[off+i] = body[i]
	}
	// The message the last request marked for the cache, unmarked.
	if i := v.cached - off; v.cached > 0 && i >= 0 && i < len(body) {
		out[v.cached] = body[i]
	}
	v.synced, v.cached = len(body), 0
	out[0] = first
	return out
}
