package session

import (
	"context"

	"github.com/bridle-dev/bridle/acp"
)

// Client is the editor as the session sees it, in ACP's vocabulary: rpc
// carries what it is given over the wire as it is; `bridle run` prints it.
type Client interface {
	// Update tells the editor about progress in a session (a
	// session/update notification's update).
	Update(ctx context.Context, sessionID string, u acp.SessionUpdate) error
	// RequestPermission asks the user about a tool call and waits for the
	// answer, one of the options offered or cancelled. It returns when ctx
	// ends, with ctx's error; any other error means the editor failed to
	// ask (the call is denied as client_error).
	RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
}

// FileClient is the editor's file system, in ACP's vocabulary
// (fs/read_text_file, fs/write_text_file): rpc's server is one, given to
// the Manager as Config.Files. A session's file tools read and write
// through it (editorFiles), as far as the editor offers it.
type FileClient interface {
	// FS says which of the two methods the editor offers; it is asked at
	// each use.
	FS() acp.FileSystemCapabilities
	// ReadTextFile and WriteTextFile return when the editor answers or
	// ctx ends. When ctx ends first, late is closed once the editor
	// answers after all (or the connection ends): until then it may
	// still open the file. late is nil otherwise.
	ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (resp acp.ReadTextFileResponse, late <-chan struct{}, err error)
	WriteTextFile(ctx context.Context, req acp.WriteTextFileRequest) (late <-chan struct{}, err error)
}

// editorFiles are one session's files through the editor: a FileClient
// as the file tools use it (tools.Buffers).
type editorFiles struct {
	fc        FileClient
	sessionID string
}

func (f editorFiles) CanRead() bool  { return f.fc.FS().ReadTextFile }
func (f editorFiles) CanWrite() bool { return f.fc.FS().WriteTextFile }

func (f editorFiles) ReadText(ctx context.Context, path string) (string, <-chan struct{}, error) {
	resp, late, err := f.fc.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: f.sessionID, Path: path})
	return resp.Content, late, err
}

func (f editorFiles) WriteText(ctx context.Context, path, content string) (<-chan struct{}, error) {
	return f.fc.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionID: f.sessionID, Path: path, Content: content})
}

// TextOf is the text of a chunk's content, "" if it holds none.
func TextOf(c *acp.ContentChunk) string {
	if c == nil || c.Content.Text == nil {
		return ""
	}
	return c.Content.Text.Text
}

// Answered is the option a permission response selected, or "" if the
// question was cancelled.
func Answered(r acp.RequestPermissionResponse) string {
	if r.Outcome.Selected == nil {
		return ""
	}
	return r.Outcome.Selected.OptionID
}

// Unattended reports whether a refusal came from a client with no person
// to ask (`bridle run`: _meta.bridle.unattended), so the model is not told
// that a user declined.
func Unattended(r acp.RequestPermissionResponse) bool {
	b, _ := r.Meta["bridle"].(map[string]any)
	u, _ := b["unattended"].(bool)
	return u
}
