package rpc

import (
	"context"
	"errors"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"

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
	return conn.Notify(ctx, "session/update", SessionNotification{SessionID: sessionID, Update: toACP(u)})
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
	req := RequestPermissionRequest{SessionID: sessionID, ToolCall: toolCallUpdate(q.Tool)}
	req.ToolCall.SessionUpdate = ""
	for _, o := range q.Options {
		req.Options = append(req.Options, PermissionOption{OptionID: o.ID, Name: o.Name, Kind: o.Kind})
	}
	var resp RequestPermissionResponse
	// Ids start at 1: a reply with a null id, which jsonrpc2 would read as
	// 0, can never be taken for the answer to one of these (the stream
	// drops such replies anyway).
	id := jsonrpc2.ID{Num: s.lastID.Add(1)}
	if err := conn.Call(ctx, "session/request_permission", req, &resp, jsonrpc2.PickID(id)); err != nil {
		var rerr *jsonrpc2.Error
		if errors.As(err, &rerr) {
			return session.Answer{}, fmt.Errorf("error %d: %s", rerr.Code, rerr.Message)
		}
		return session.Answer{}, err
	}
	switch resp.Outcome.Outcome {
	case "cancelled":
		return session.Answer{Cancelled: true}, nil
	case "selected":
		for _, o := range q.Options {
			if o.ID == resp.Outcome.OptionID {
				return session.Answer{OptionID: o.ID}, nil
			}
		}
		return session.Answer{}, fmt.Errorf("the client selected %q, which is not one of the options offered", resp.Outcome.OptionID)
	}
	return session.Answer{}, fmt.Errorf("the client answered with outcome %q; want \"selected\" or \"cancelled\"", resp.Outcome.Outcome)
}

func toACP(u session.Update) any {
	switch u.Kind {
	case session.UpdateUserText:
		return ContentChunk{SessionUpdate: "user_message_chunk", Content: TextBlock{Type: "text", Text: u.Text}}
	case session.UpdateAgentText:
		return ContentChunk{SessionUpdate: "agent_message_chunk", Content: TextBlock{Type: "text", Text: u.Text}}
	case session.UpdateAgentThought:
		return ContentChunk{SessionUpdate: "agent_thought_chunk", Content: TextBlock{Type: "text", Text: u.Text}}
	case session.UpdateToolCall:
		tc := toolCallUpdate(*u.Tool)
		return ToolCall{SessionUpdate: "tool_call", ToolCallID: tc.ToolCallID, Title: tc.Title, Kind: tc.Kind,
			Status: tc.Status, Content: tc.Content, Locations: tc.Locations, RawInput: tc.RawInput}
	case session.UpdateToolCallDone:
		return toolCallUpdate(*u.Tool)
	case session.UpdateUsage:
		return UsageUpdate{SessionUpdate: "usage_update", Used: u.Usage.Used, Size: u.Usage.Size}
	case session.UpdateMode:
		return CurrentModeUpdate{SessionUpdate: "current_mode_update", CurrentModeID: u.Mode}
	case session.UpdateCommands:
		up := AvailableCommandsUpdate{SessionUpdate: "available_commands_update", AvailableCommands: []AvailableCommand{}}
		for _, c := range u.Commands {
			ac := AvailableCommand{Name: c.Name, Description: c.Description}
			if c.Hint != "" {
				ac.Input = &AvailableCommandInput{Hint: c.Hint}
			}
			up.AvailableCommands = append(up.AvailableCommands, ac)
		}
		return up
	}
	panic(fmt.Sprintf("rpc: no ACP form for update kind %d", u.Kind))
}

func toolCallUpdate(v session.ToolView) ToolCallUpdate {
	up := ToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallID: v.ID, Title: v.Title, Kind: v.Kind, Status: v.Status, RawInput: v.Input}
	for _, l := range v.Locations {
		loc := ToolCallLocation{Path: l.Path}
		if l.Line > 0 {
			line := l.Line
			loc.Line = &line
		}
		up.Locations = append(up.Locations, loc)
	}
	if v.Output != "" {
		text := v.Output
		if v.Terminal {
			text = "```\n" + text + "\n```"
		}
		up.Content = append(up.Content, ToolCallContent{Type: "content", Content: &TextBlock{Type: "text", Text: text}})
	}
	if v.Diff != nil {
		newText := v.Diff.NewText
		up.Content = append(up.Content, ToolCallContent{Type: "diff", Path: v.Diff.Path, OldText: v.Diff.OldText, NewText: &newText})
	}
	return up
}

// contentOf converts a prompt's ACP content blocks to event content.
func contentOf(blocks []ContentBlock) ([]event.Content, error) {
	out := make([]event.Content, 0, len(blocks))
	for i, b := range blocks {
		c := event.Content{Type: b.Type, Text: b.Text, URI: b.URI, Name: b.Name, MimeType: b.MimeType, Data: b.Data}
		switch b.Type {
		case "text", "resource_link":
		case "resource":
			if b.Resource == nil {
				return nil, invalidField("prompt[%d].resource", "is required for a resource block", i)
			}
			c.URI, c.Text, c.MimeType = b.Resource.URI, b.Resource.Text, b.Resource.MimeType
		case "image", "audio":
			return nil, invalidField("prompt[%d].type", fmt.Sprintf("%q is not supported: bridle advertises promptCapabilities image and audio as false", b.Type), i)
		default:
			return nil, invalidField("prompt[%d].type", fmt.Sprintf("%q is not an ACP content block type", b.Type), i)
		}
		out = append(out, c)
	}
	return out, nil
}
