package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bridle-dev/bridle/acp"
)

// Update implements session.Client: a session/update notification. It is
// encoded here, once, and written to the stream: jsonrpc2's Notify encodes
// the params, then the message holding them, and encoding/json checks
// the params' bytes again on the way (a session/load of 100,000 events
// spent two thirds of its writing there).
func (s *Server) Update(ctx context.Context, sessionID string, u acp.SessionUpdate) error {
	s.mu.Lock()
	conn, stream := s.conn, s.stream
	s.mu.Unlock()
	if conn == nil {
		return fmt.Errorf("no client connected")
	}
	select {
	case <-conn.DisconnectNotify():
		return jsonrpc2.ErrClosed
	default:
	}
	body, err := updateMessage(sessionID, u)
	if err != nil {
		return err
	}
	return stream.writeBody(body)
}

// updateMessage is the session/update notification of u: the message
// jsonrpc2's Notify writes, encoded once.
func updateMessage(sessionID string, u acp.SessionUpdate) ([]byte, error) {
	update, err := u.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode a session/update: %w", err)
	}
	id, err := json.Marshal(sessionID)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(update)+len(id)+96)
	b = append(b, `{"jsonrpc":"2.0","method":"`+acp.MethodSessionUpdate+`","params":{"sessionId":`...)
	b = append(b, id...)
	b = append(b, `,"update":`...)
	b = append(b, update...)
	return append(b, "}}"...), nil
}

// RequestPermission implements session.Client: a session/request_permission
// request, answered whenever the user decides. An answer that is neither
// one of the options offered nor cancelled is an error.
func (s *Server) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return acp.RequestPermissionResponse{}, fmt.Errorf("no client connected")
	}
	var resp acp.RequestPermissionResponse
	if _, err := s.ask(ctx, conn, acp.MethodSessionRequestPermission, req, &resp); err != nil {
		var rerr *jsonrpc2.Error
		var ue *acp.UnionError
		switch {
		case errors.As(err, &rerr):
			return acp.RequestPermissionResponse{}, fmt.Errorf("error %d: %s", rerr.Code, rerr.Message)
		case errors.As(err, &ue) && ue.Field == "outcome":
			return acp.RequestPermissionResponse{}, fmt.Errorf("the client answered with outcome %q; want \"selected\" or \"cancelled\"", ue.Value)
		}
		return acp.RequestPermissionResponse{}, err
	}
	switch o := resp.Outcome; {
	case o.Cancelled != nil:
		return resp, nil
	case o.Selected != nil:
		for _, opt := range req.Options {
			if opt.OptionID == o.Selected.OptionID {
				return resp, nil
			}
		}
		return acp.RequestPermissionResponse{}, fmt.Errorf("the client selected %q, which is not one of the options offered", o.Selected.OptionID)
	}
	return acp.RequestPermissionResponse{}, fmt.Errorf("the client answered with outcome %q; want \"selected\" or \"cancelled\"", "")
}

// FS implements session.FileClient: which of ACP's fs methods the
// editor offers, as initialize said.
func (s *Server) FS() acp.FileSystemCapabilities {
	return acp.FileSystemCapabilities{ReadTextFile: s.fsRead.Load(), WriteTextFile: s.fsWrite.Load()}
}

// ReadTextFile implements session.FileClient: an fs/read_text_file
// request, the text of a file as the editor holds it.
func (s *Server) ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, <-chan struct{}, error) {
	var resp acp.ReadTextFileResponse
	late, err := s.call(ctx, acp.MethodFSReadTextFile, req, &resp)
	return resp, late, err
}

// WriteTextFile implements session.FileClient: an fs/write_text_file
// request, a file's new text given to the editor.
func (s *Server) WriteTextFile(ctx context.Context, req acp.WriteTextFileRequest) (<-chan struct{}, error) {
	var ignored json.RawMessage // the answer is empty
	return s.call(ctx, acp.MethodFSWriteTextFile, req, &ignored)
}

// call sends the client a request and waits for its answer; a JSON-RPC
// error comes back as its code and message. late is as ask returns it.
func (s *Server) call(ctx context.Context, method string, params, result any) (late <-chan struct{}, err error) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return nil, fmt.Errorf("no client connected")
	}
	late, err = s.ask(ctx, conn, method, params, result)
	var rerr *jsonrpc2.Error
	if errors.As(err, &rerr) {
		return late, fmt.Errorf("error %d: %s", rerr.Code, rerr.Message)
	}
	return late, err
}

// ask sends the client a request and waits for its answer or for ctx to
// end. A request ctx ends is abandoned at once, whatever the client does,
// and the client is told with ACP's $/cancel_request, so it can stop
// working on it; late is then closed when its answer comes after all (it
// is dropped) or the connection ends, and is nil otherwise.
func (s *Server) ask(ctx context.Context, conn *jsonrpc2.Conn, method string, params, result any) (late <-chan struct{}, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err // not asked: nobody waits for the answer
	}
	// Ids start at 1: a reply with a null id, which jsonrpc2 would read as
	// 0, can never be taken for the answer to one of these (the stream
	// drops such replies anyway).
	id := jsonrpc2.ID{Num: s.lastID.Add(1)}
	call, err := conn.DispatchCall(ctx, method, params, jsonrpc2.PickID(id))
	if err != nil {
		return nil, err
	}
	err = call.Wait(ctx, result)
	if err == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return nil, err
	}
	raw, _ := json.Marshal(id)
	if nerr := conn.Notify(context.WithoutCancel(ctx), acp.MethodCancelRequest, acp.CancelRequestNotification{RequestID: raw}); nerr != nil {
		s.log.Debug("$/cancel_request not sent", "method", method, "err", nerr)
	}
	answered := make(chan struct{})
	go func() {
		call.Wait(context.Background(), nil) // the answer, or the connection's end
		close(answered)
	}()
	return answered, err
}
