package rpc

import (
	"context"

	"github.com/bridle-dev/bridle/session"
)

// The extensions an editor rewinds and forks with: _bridle/prompts to
// choose a prompt, _bridle/rewind_preview to show what /rewind would do,
// _bridle/fork to start a session from the history before a prompt.

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
	ps, err := sess.Prompts(ctx)
	if err != nil {
		return PromptsResponse{}, err
	}
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
// is the session's before its prompt (counted from 1). ACP's session/fork
// forks at the session's end and names no prompt, so choosing one is an
// extension.
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
