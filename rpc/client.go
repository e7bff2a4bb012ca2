package rpc

import (
	"context"
	"errors"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/session"
	"github.com/bridle-dev/bridle/session/event"
)

// Update implements session.Client: a session/update notification.
func (s *Server) Update(ctx context.Context, sessionID string, u session.Update) error {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return fmt.Errorf("no client connected")
	}
	return conn.Notify(ctx, acp.MethodSessionUpdate, acp.SessionNotification{SessionID: sessionID, Update: toACP(u)})
}

// RequestPermission implements session.Client: a session/request_permission
// request, answered whenever the user decides.
func (s *Server) RequestPermission(ctx context.Context, sessionID string, q session.Question) (session.Answer, error) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return session.Answer{}, fmt.Errorf("no client connected")
	}
	req := acp.RequestPermissionRequest{SessionID: sessionID, ToolCall: toolCallUpdate(q.Tool)}
	for _, o := range q.Options {
		req.Options = append(req.Options, acp.PermissionOption{OptionID: o.ID, Name: o.Name, Kind: acp.PermissionOptionKind(o.Kind)})
	}
	var resp acp.RequestPermissionResponse
	// Ids start at 1: a reply with a null id, which jsonrpc2 would read as
	// 0, can never be taken for the answer to one of these (the stream
	// drops such replies anyway).
	id := jsonrpc2.ID{Num: s.lastID.Add(1)}
	if err := conn.Call(ctx, acp.MethodSessionRequestPermission, req, &resp, jsonrpc2.PickID(id)); err != nil {
		var rerr *jsonrpc2.Error
		var ue *acp.UnionError
		switch {
		case errors.As(err, &rerr):
			return session.Answer{}, fmt.Errorf("error %d: %s", rerr.Code, rerr.Message)
		case errors.As(err, &ue) && ue.Field == "outcome":
			return session.Answer{}, fmt.Errorf("the client answered with outcome %q; want \"selected\" or \"cancelled\"", ue.Value)
		}
		return session.Answer{}, err
	}
	switch o := resp.Outcome; {
	case o.Cancelled != nil:
		return session.Answer{Cancelled: true}, nil
	case o.Selected != nil:
		for _, opt := range q.Options {
			if opt.ID == o.Selected.OptionID {
				return session.Answer{OptionID: opt.ID}, nil
			}
		}
		return session.Answer{}, fmt.Errorf("the client selected %q, which is not one of the options offered", o.Selected.OptionID)
	}
	return session.Answer{}, fmt.Errorf("the client answered with outcome %q; want \"selected\" or \"cancelled\"", "")
}

func text(s string) acp.ContentBlock {
	return acp.ContentBlock{Text: &acp.TextContent{Text: s}}
}

func toACP(u session.Update) acp.SessionUpdate {
	switch u.Kind {
	case session.UpdateUserText:
		return acp.SessionUpdate{UserMessageChunk: &acp.ContentChunk{Content: text(u.Text)}}
	case session.UpdateAgentText:
		return acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: text(u.Text)}}
	case session.UpdateAgentThought:
		return acp.SessionUpdate{AgentThoughtChunk: &acp.ContentChunk{Content: text(u.Text)}}
	case session.UpdateToolCall:
		tc := toolCallUpdate(*u.Tool)
		call := acp.ToolCall{ToolCallID: tc.ToolCallID, Kind: tc.Kind, Status: tc.Status,
			Content: tc.Content, Locations: tc.Locations, RawInput: tc.RawInput}
		if tc.Title != nil {
			call.Title = *tc.Title
		}
		return acp.SessionUpdate{ToolCall: &call}
	case session.UpdateToolCallDone:
		tc := toolCallUpdate(*u.Tool)
		return acp.SessionUpdate{ToolCallUpdate: &tc}
	case session.UpdateUsage:
		return acp.SessionUpdate{UsageUpdate: &acp.UsageUpdate{Used: uint64(u.Usage.Used), Size: uint64(u.Usage.Size)}}
	case session.UpdateMode:
		return acp.SessionUpdate{CurrentModeUpdate: &acp.CurrentModeUpdate{CurrentModeID: u.Mode}}
	case session.UpdateCommands:
		up := acp.AvailableCommandsUpdate{AvailableCommands: []acp.AvailableCommand{}}
		for _, c := range u.Commands {
			ac := acp.AvailableCommand{Name: c.Name, Description: c.Description}
			if c.Hint != "" {
				ac.Input = &acp.AvailableCommandInput{Hint: c.Hint}
			}
			up.AvailableCommands = append(up.AvailableCommands, ac)
		}
		return acp.SessionUpdate{AvailableCommandsUpdate: &up}
	}
	panic(fmt.Sprintf("rpc: no ACP form for update kind %d", u.Kind))
}

func toolCallUpdate(v session.ToolView) acp.ToolCallUpdate {
	up := acp.ToolCallUpdate{ToolCallID: v.ID, Title: optional(v.Title), RawInput: v.Input}
	if v.Kind != "" {
		k := acp.ToolKind(v.Kind)
		up.Kind = &k
	}
	if v.Status != "" {
		st := acp.ToolCallStatus(v.Status)
		up.Status = &st
	}
	for _, l := range v.Locations {
		loc := acp.ToolCallLocation{Path: l.Path}
		if l.Line > 0 {
			line := uint64(l.Line)
			loc.Line = &line
		}
		up.Locations = append(up.Locations, loc)
	}
	if v.Output != "" {
		out := v.Output
		if v.Terminal {
			out = "```\n" + out + "\n```"
		}
		up.Content = append(up.Content, acp.ToolCallContent{Content: &acp.Content{Content: text(out)}})
	}
	if v.Diff != nil {
		up.Content = append(up.Content, acp.ToolCallContent{Diff: &acp.Diff{Path: v.Diff.Path, OldText: v.Diff.OldText, NewText: v.Diff.NewText}})
	}
	return up
}

// contentOf converts a prompt's ACP content blocks to event content.
func contentOf(blocks []acp.ContentBlock) ([]event.Content, error) {
	out := make([]event.Content, 0, len(blocks))
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	for i, b := range blocks {
		var c event.Content
		switch {
		case b.Text != nil:
			c = event.Content{Type: "text", Text: b.Text.Text}
		case b.ResourceLink != nil:
			l := b.ResourceLink
			c = event.Content{Type: "resource_link", URI: l.URI, Name: l.Name, MimeType: deref(l.MimeType)}
		case b.Resource != nil:
			r := b.Resource.Resource
			if r.URI == "" {
				return nil, invalidField("prompt[%d].resource", "is required for a resource block, with its uri", i)
			}
			c = event.Content{Type: "resource", URI: r.URI, Text: deref(r.Text), MimeType: deref(r.MimeType)}
		case b.Image != nil, b.Audio != nil:
			kind := "image"
			if b.Audio != nil {
				kind = "audio"
			}
			return nil, invalidField("prompt[%d].type", fmt.Sprintf("%q is not supported: bridle advertises promptCapabilities image and audio as false", kind), i)
		default:
			return nil, invalidField("prompt[%d].type", "is required (text, resource_link, resource, image or audio)", i)
		}
		out = append(out, c)
	}
	return out, nil
}
