package session

import (
	"context"
	"encoding/json"
)

// Client is the editor as the session sees it. rpc implements it with ACP;
// the session never learns which protocol carries its updates.
type Client interface {
	// Update tells the editor about progress in a session.
	Update(ctx context.Context, sessionID string, u Update) error
	// RequestPermission asks the user about a tool call and waits for the
	// answer. It returns when ctx ends, with ctx's error; any other error
	// means the editor failed to ask (the call is denied as client_error).
	RequestPermission(ctx context.Context, sessionID string, q Question) (Answer, error)
}

// UpdateKind says what an Update carries.
type UpdateKind int

const (
	UpdateUserText     UpdateKind = iota + 1 // Text: the user's prompt (replay only)
	UpdateAgentText                          // Text: a fragment of the answer
	UpdateAgentThought                       // Text: a fragment of reasoning
	UpdateToolCall                           // Tool: a new call
	UpdateToolCallDone                       // Tool: a change to a call (status, content)
	UpdateUsage                              // Usage: context window occupancy
	UpdateMode                               // Mode: the current mode changed
	UpdateCommands                           // Commands: the slash commands on offer
)

// Update is one piece of progress for the editor.
type Update struct {
	Kind     UpdateKind
	Text     string
	Tool     *ToolView
	Usage    *Usage
	Mode     string
	Commands []Command
}

// ToolView is a tool call as the editor shows it.
type ToolView struct {
	ID        string
	Title     string
	Kind      string // ACP ToolKind
	Status    string // pending, in_progress, completed, failed
	Input     json.RawMessage
	Output    string
	Locations []Location
	Diff      *Diff
	// Terminal says Output is a command's output (shown in a code block).
	Terminal bool
}

// Location is a file a call touches.
type Location struct {
	Path string
	Line int
}

// Diff is an edit.
type Diff struct {
	Path    string
	OldText *string
	NewText string
}

// Usage is how full the context window is.
type Usage struct {
	Used, Size int
}

// Command is a slash command the user can type.
type Command struct {
	Name, Description, Hint string
}

// Question asks the user to approve a tool call.
type Question struct {
	Tool    ToolView
	Options []Option
}

// Option is one answer to a Question.
type Option struct {
	ID   string
	Name string
	Kind string // allow_once, allow_always, reject_once, reject_always
}

// Answer is the user's choice, or Cancelled if the question was withdrawn.
type Answer struct {
	OptionID  string
	Cancelled bool
}
