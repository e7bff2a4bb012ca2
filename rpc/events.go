package rpc

import (
	"context"
	"encoding/json"
	"time"
)

// EventsRequest is the params of _bridle/events: a session's log, the
// part of bridle's state ACP has no method for.
type EventsRequest struct {
	SessionID string `json:"sessionId"`
	// After skips events with seq <= After.
	After int64 `json:"after,omitempty"`
}

func (r *EventsRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	return nil
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
}

func (s *Server) events(ctx context.Context, p EventsRequest) (EventsResponse, error) {
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		return EventsResponse{}, err
	}
	resp := EventsResponse{Events: []EventView{}}
	for _, e := range sess.Events() {
		if e.Seq <= p.After {
			continue
		}
		payload, err := json.Marshal(e.Payload)
		if err != nil {
			return EventsResponse{}, err
		}
		resp.Events = append(resp.Events, EventView{Seq: e.Seq, Kind: string(e.Kind()), Time: e.Time.UTC().Format(time.RFC3339Nano), Tokens: e.Tokens, Payload: payload})
	}
	return resp, nil
}
