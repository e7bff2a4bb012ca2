package rpc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/session/event"
)

// EventsRequest is the params of _bridle/events: a session's log, the
// part of bridle's state ACP has no method for.
type EventsRequest struct {
	SessionID string `json:"sessionId"`
	// After skips events with seq <= After.
	After int64          `json:"after,omitempty"`
	Meta  map[string]any `json:"_meta,omitempty"`
}

// EventsResponse lists events in log order.
type EventsResponse struct {
	Events []EventView `json:"events"`
}

// EventView is one event as `bridle log --json` prints it.
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

// Replaces is what a compaction's summary replaced.
type Replaces struct {
	From          int64 `json:"from"`
	Through       int64 `json:"through"`
	Events        int   `json:"events"`
	Tokens        int   `json:"tokens"`
	SummaryTokens int   `json:"summaryTokens"`
}

// ReplacesOf describes what the compaction at seq replaced; nil for any
// other event.
func ReplacesOf(events []event.Event, seq int64) *Replaces {
	r, ok := contextwin.Replaced(events, seq)
	if !ok {
		return nil
	}
	return &Replaces{From: r.From, Through: r.Through, Events: r.Events, Tokens: r.Tokens, SummaryTokens: r.SummaryTokens}
}

func (s *Server) events(ctx context.Context, p EventsRequest) (EventsResponse, error) {
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		return EventsResponse{}, err
	}
	resp := EventsResponse{Events: []EventView{}}
	all := sess.Events()
	for _, e := range all {
		if e.Seq <= p.After {
			continue
		}
		payload, err := json.Marshal(e.Payload)
		if err != nil {
			return EventsResponse{}, err
		}
		v := EventView{Seq: e.Seq, Kind: string(e.Kind()), Time: e.Time.UTC().Format(time.RFC3339Nano), Tokens: e.Tokens, Payload: payload}
		if e.Kind() == event.KindCompaction {
			v.Replaces = ReplacesOf(all, e.Seq)
		}
		resp.Events = append(resp.Events, v)
	}
	return resp, nil
}
