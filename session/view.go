package session

import (
	"encoding/json"
	"time"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
)

// EventView is one event as `bridle log --json` prints it and
// _bridle/events returns it.
type EventView struct {
	Seq     int64           `json:"seq"`
	Kind    string          `json:"kind"`
	Time    string          `json:"time"`
	Tokens  int             `json:"tokens"`
	Payload json.RawMessage `json:"payload"`
	// Replaces says, for a compaction, which events its summary stands for
	// in the context window (they stay in the log).
	Replaces *Replaces `json:"replaces,omitempty"`
}

// Replaces is what a compaction's summary stands for (events from
// through, coveredTokens of originals) and, separately, what it did to
// the window (windowBefore → windowAfter, freedTokens).
type Replaces struct {
	From          int64 `json:"from"`
	Through       int64 `json:"through"`
	Events        int   `json:"events"`
	CoveredTokens int   `json:"coveredTokens"`
	SummaryTokens int   `json:"summaryTokens"`
	WindowBefore  int   `json:"windowBefore,omitempty"`
	WindowAfter   int   `json:"windowAfter,omitempty"`
	FreedTokens   int   `json:"freedTokens,omitempty"`
}

// ReplacesOf describes what the compaction at seq replaced; nil for any
// other event.
func ReplacesOf(events []event.Event, seq int64) *Replaces {
	r, ok := contextwin.Replaced(events, seq)
	if !ok {
		return nil
	}
	return &Replaces{From: r.From, Through: r.Through, Events: r.Events, CoveredTokens: r.CoveredTokens, SummaryTokens: r.SummaryTokens,
		WindowBefore: r.WindowBefore, WindowAfter: r.WindowAfter, FreedTokens: r.Freed}
}

// ViewEvent is all[i] as the log shows it. stored is the payload as the
// store holds it, used as is when given (an event that cannot be decoded
// still prints); otherwise the decoded payload is encoded.
func ViewEvent(all []event.Event, i int, stored json.RawMessage) (EventView, error) {
	e := all[i]
	payload := stored
	if payload == nil {
		b, err := json.Marshal(e.Payload)
		if err != nil {
			return EventView{}, err
		}
		payload = b
	}
	v := EventView{Seq: e.Seq, Kind: string(e.Kind()), Time: e.Time.UTC().Format(time.RFC3339Nano), Tokens: e.Tokens, Payload: payload}
	if e.Kind() == event.KindCompaction {
		v.Replaces = ReplacesOf(all, e.Seq)
	}
	return v, nil
}
