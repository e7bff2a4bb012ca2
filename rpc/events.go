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

// EventsResponse lists events in log order.
type EventsResponse struct {
	Events []EventView `json:"events"`
}

// EventView is one event as `bridle log --json` prints it.
type EventView = session.EventView

func (s *Server) events(ctx context.Context, p EventsRequest) (EventsResponse, error) {
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		return EventsResponse{}, err
	}
	resp := EventsResponse{Events: []EventView{}}
	all := sess.Events()
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

// PromptsRequest is the params of _bridle/prompts: a session's prompts,
// with the files each changed, to choose where to rewind to.
type PromptsRequest struct {
	SessionID string         `json:"sessionId"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// PromptsResponse lists the prompts in order.
type PromptsResponse struct {
	Prompts []session.PromptView `json:"prompts"`
}

func (s *Server) prompts(ctx context.Context, p PromptsRequest) (PromptsResponse, error) {
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		return PromptsResponse{}, err
	}
	ps := sess.Prompts()
	if ps == nil {
		ps = []session.PromptView{}
	}
	return PromptsResponse{Prompts: ps}, nil
}

// RewindPreviewRequest is the params of _bridle/rewind_preview: what
// `/rewind prompt` would do now, changing nothing.
type RewindPreviewRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    int            `json:"prompt"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

func (s *Server) rewindPreview(ctx context.Context, p RewindPreviewRequest) (session.RewindPlan, error) {
	sess, err := s.mgr.Get(ctx, p.SessionID)
	if err != nil {
		return session.RewindPlan{}, err
	}
	return sess.RewindPlan(ctx, p.Prompt)
}

// ForkRequest is the params of _bridle/fork: a new session whose history
// is the session's before its prompt (counted from 1). The vendored ACP
// schema has no session/fork, so it is an extension.
type ForkRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    int            `json:"prompt"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// ForkResponse names the fork; the editor opens it with session/load.
type ForkResponse struct {
	SessionID string `json:"sessionId"`
	Title     string `json:"title"`
}

func (s *Server) fork(ctx context.Context, p ForkRequest) (ForkResponse, error) {
	info, err := s.mgr.Fork(ctx, p.SessionID, p.Prompt)
	if err != nil {
		return ForkResponse{}, err
	}
	return ForkResponse{SessionID: info.ID, Title: info.Title}, nil
}
