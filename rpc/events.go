package rpc

import (
	"context"

	"github.com/bridle-dev/bridle/session"
)

// EventsRequest is the params of _bridle/events: a session's log, the
// part of bridle's state ACP has no method for.
type EventsRequest struct {
	SessionID string `json:"sessionId"`
	// After skips events with seq <= After.
	After int64          `json:"after,omitempty"`
	Meta  map[string]any `json:"_meta,omitempty"`
}

// EventsResponse lists events in log order, each as `bridle log --json`
// prints it.
type EventsResponse struct {
	Events []session.EventView `json:"events"`
}

func (s *Server) events(ctx context.Context, p EventsRequest) (EventsResponse, error) {
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		return EventsResponse{}, err
	}
	resp := EventsResponse{Events: []session.EventView{}}
	all, err := sess.Log(ctx)
	if err != nil {
		return EventsResponse{}, err
	}
	for i, e := range all {
		if e.Seq <= p.After {
			continue
		}
		v, err := session.ViewEvent(all, i, nil)
		if err != nil {
			return EventsResponse{}, err
		}
		resp.Events = append(resp.Events, v)
	}
	return resp, nil
}
