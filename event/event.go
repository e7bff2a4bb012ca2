// Package event defines the closed, versioned set of events a session log
// holds. It imports nothing of the project so that session, contextwin and
// the CLI can share it without a cycle; store keeps events as opaque bytes.
//
// Every payload carries V, its schema version. A payload's fields may only
// be added (never renamed or retyped) within a version; a change that old
// readers could misread bumps V and adds a decoding case.
package event

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Kind names an event type. The set is closed: Decode rejects others.
type Kind string

const (
	KindSessionStarted   Kind = "session_started"
	KindUserMessage      Kind = "user_message"
	KindAssistantMessage Kind = "assistant_message"
	KindToolStarted      Kind = "tool_started"
	KindToolResult       Kind = "tool_result"
	KindApprovalRequest  Kind = "approval_request"
	KindApprovalGranted  Kind = "approval_granted"
	KindApprovalDenied   Kind = "approval_denied"
	KindInterrupted      Kind = "interrupted"
	KindCompaction       Kind = "compaction"
	KindConstraintPinned Kind = "constraint_pinned"
	KindDecisionRecorded Kind = "decision_recorded"
	KindContextAssembled Kind = "context_assembled"
	KindModeChanged      Kind = "mode_changed"
	KindModelChanged     Kind = "model_changed"
	KindFileChanged      Kind = "file_changed"
	KindSubagentStarted  Kind = "subagent_started"
	KindSubagentFinished Kind = "subagent_finished"
	KindTurnFinished     Kind = "turn_finished"
	KindProviderError    Kind = "provider_error"
	KindPlanUpdated      Kind = "plan_updated"
	KindRewindStarted    Kind = "rewind_started"
	KindRewound          Kind = "rewound"
	KindHookRan          Kind = "hook_ran"
	KindCommandFinished  Kind = "command_finished"
)

// Payload is the body of one event.
type Payload interface {
	Kind() Kind
	// Line renders the event on one line, as `bridle log` prints it
	// (summary.go).
	Line() string
}

// Event is one entry of a session's log.
type Event struct {
	Seq     int64
	Time    time.Time
	Tokens  int
	Payload Payload
}

// Kind returns the event's kind.
func (e Event) Kind() Kind { return e.Payload.Kind() }

// Version of every payload written by this bridle.
const Version = 1

// Content is one block of a user's prompt.
type Content struct {
	Type     string `json:"type"` // text, resource_link, resource, image
	Text     string `json:"text,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	Data     string `json:"data,omitempty"`
	// An image is stored once, by its content, outside the log: URI is
	// "image:sha256:HEX" and Data is empty; Width, Height and Size (bytes)
	// are what its token count is computed from.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	Size   int `json:"size,omitempty"`
}

// SessionStarted opens a log and pins what must not change silently.
type SessionStarted struct {
	V              int      `json:"v"`
	Cwd            string   `json:"cwd"`
	AdditionalDirs []string `json:"additional_dirs,omitempty"`
	Model          string   `json:"model"` // provider/model-id, pinned
	Mode           string   `json:"mode"`
}

// UserMessage is a prompt from the editor.
type UserMessage struct {
	V       int       `json:"v"`
	Content []Content `json:"content"`
	// Redacted names the kind of each secret replaced in the prompt
	// before it was recorded (env:NAME, .env:NAME, github-token …): the
	// user is told, live and on replay.
	Redacted []string `json:"redacted,omitempty"`
	// Command is the prompt command the user typed, when Content is its
	// expansion: the log keeps what the model saw and what produced it.
	Command *CommandUse `json:"command,omitempty"`
	// HookContext is what the user's hooks added for the model with this
	// prompt (SessionStart, UserPromptSubmit, and the Stop hooks of the
	// turn before): the model reads it after the prompt (ModelText); the
	// editor shows the prompt alone.
	HookContext []string `json:"hook_context,omitempty"`
}

// ModelText is the prompt as the model reads it: its text, then what the
// hooks added.
func (m UserMessage) ModelText() string {
	s := m.Text()
	for _, c := range m.HookContext {
		s += "\n\n[added by a hook of the user: " + c + "]"
	}
	return s
}

// CommandUse is a prompt command as the user typed it: /Name Arguments.
type CommandUse struct {
	Name string `json:"name"`
	// Arguments are the user's words after the name, redacted as the
	// prompt is.
	Arguments string `json:"arguments,omitempty"`
	// Whose is "user" or "project"; File is the command's file.
	Whose string `json:"whose"`
	File  string `json:"file"`
}

// Typed is the command line the user typed.
func (c CommandUse) Typed() string {
	return strings.TrimSpace("/" + c.Name + " " + c.Arguments)
}

// Text returns the prompt's text blocks joined, with links and embedded
// resources rendered so the model can see them.
func (m UserMessage) Text() string {
	var s string
	for i, c := range m.Content {
		if i > 0 {
			s += "\n"
		}
		switch c.Type {
		case "text":
			s += c.Text
		case "resource_link":
			s += fmt.Sprintf("[resource: %s %s]", c.Name, c.URI)
		case "resource":
			s += fmt.Sprintf("[resource %s]\n%s", c.URI, c.Text)
		default:
			s += fmt.Sprintf("[%s %s]", c.Type, c.MimeType)
		}
	}
	return s
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID    string          `json:"id"` // the provider's id
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// Redacted says secrets were taken out of Input before it was
	// recorded: the call ran with the input the model wrote, which the
	// log does not keep, so it cannot be run again from the log.
	Redacted bool `json:"redacted,omitempty"`
}

// Usage counts the tokens of one model call.
type Usage struct {
	InputTokens      int `json:"input_tokens,omitempty"`
	OutputTokens     int `json:"output_tokens,omitempty"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// AssistantMessage is one complete model response.
type AssistantMessage struct {
	V          int        `json:"v"`
	Text       string     `json:"text,omitempty"`
	Thinking   string     `json:"thinking,omitempty"`
	Signature  string     `json:"signature,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	StopReason string     `json:"stop_reason,omitempty"`
	Usage      Usage      `json:"usage,omitempty"`
}

// ToolStarted is committed before a tool runs. Key is the idempotency key
// (session/seq-of-assistant-event/call-index), the same on every replay.
type ToolStarted struct {
	V      int             `json:"v"`
	CallID string          `json:"call_id"`
	Key    string          `json:"key"`
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	// Redacted: as ToolCall.Redacted.
	Redacted bool `json:"redacted,omitempty"`
	// Hashes of the target file before and after an edit, so a restart can
	// tell whether the edit already landed.
	Path       string `json:"path,omitempty"`
	BeforeHash string `json:"before_hash,omitempty"`
	AfterHash  string `json:"after_hash,omitempty"`
}

// Diff shows an edit.
type Diff struct {
	Path    string  `json:"path"`
	OldText *string `json:"old_text,omitempty"`
	NewText string  `json:"new_text"`
}

// ToolResult is a finished call, committed with its idempotency record.
type ToolResult struct {
	V       int    `json:"v"`
	CallID  string `json:"call_id"`
	Key     string `json:"key"`
	Name    string `json:"name"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
	// Status is completed, failed, cancelled, denied, unknown or unavailable.
	Status    string   `json:"status"`
	Diff      *Diff    `json:"diff,omitempty"`
	Locations []string `json:"locations,omitempty"`
	// Artifact names the file holding the whole output when it was capped.
	Artifact string `json:"artifact,omitempty"`
	// Lines and Bytes measure the whole output, before any cap.
	Lines int `json:"lines,omitempty"`
	Bytes int `json:"bytes,omitempty"`
	// Cached says the output was served from the tool-output cache: the
	// files it depended on had not changed since the call that made it.
	Cached bool `json:"cached,omitempty"`
	// Seen lists the files whose content the model now knows (the file it
	// read, the one it edited), each with its version then, so that a
	// change on disk can be told apart from what the model saw, across
	// restarts too.
	Seen []FileSeen `json:"seen,omitempty"`
	// Changed lists the workspace files a command created, changed or
	// deleted, found by comparing the tree before and after it, so that a
	// rewind can put them back.
	Changed []FileChange `json:"changed,omitempty"`
	// Unscanned says why the workspace was not scanned around this
	// command (or not after it): what it changed is not all in Changed,
	// and a rewind says it cannot put that back.
	Unscanned string `json:"unscanned,omitempty"`
	// Background is the id of the command this call started in the
	// background (bg1): it ran on after the result, until its
	// command_finished.
	Background string `json:"background,omitempty"`
}

// CommandFinished records the end of a command run_command started in
// the background (ToolResult.Background), whose call's key is Key: how
// it ended, the end of its output, and what it changed in the workspace
// while it ran, for a rewind to put back.
type CommandFinished struct {
	V   int    `json:"v"`
	Key string `json:"key"`
	ID  string `json:"id"`
	// Status is completed, failed, stopped, or unknown: bridle ended
	// (killed, crashed) while it ran, and a later bridle found it so.
	Status  string `json:"status"`
	Summary string `json:"summary"`
	// Tail is the end of its output, redacted.
	Tail      string       `json:"tail,omitempty"`
	Changed   []FileChange `json:"changed,omitempty"`
	Unscanned string       `json:"unscanned,omitempty"`
}

// FileChange is a file a command changed: its hash before ("" when the
// command created it, NotKept when its content before was not kept) and
// after ("" when the command deleted it).
type FileChange struct {
	Path   string `json:"path"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Mode is the file's permission bits before, when it existed.
	Mode uint32 `json:"mode,omitempty"`
	// Why says why Before is NotKept.
	Why string `json:"why,omitempty"`
}

// NotKept stands for the content a file had before a command changed it
// when that content was not kept (too large, hard-linked, or past the
// snapshot's bounds): a rewind says it cannot put the file back.
const NotKept = "not-kept"

// FileSeen is a file the model knows, at a version (size, modification
// time and inode).
type FileSeen struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// ApprovalRequest records a question put to the user.
type ApprovalRequest struct {
	V       int      `json:"v"`
	CallID  string   `json:"call_id"`
	Key     string   `json:"key"`
	Tool    string   `json:"tool"`
	Summary string   `json:"summary"` // the exact command or the path
	Pattern string   `json:"pattern,omitempty"`
	Options []string `json:"options"`
}

// ApprovalGranted records a yes. Scope is "once" or "session"; a session
// grant applies to Tool calls matching Pattern.
type ApprovalGranted struct {
	V       int    `json:"v"`
	CallID  string `json:"call_id"`
	Key     string `json:"key"`
	Tool    string `json:"tool"`
	Scope   string `json:"scope"`
	Pattern string `json:"pattern,omitempty"`
}

// ApprovalDenied records a no, or a request cancelled before an answer.
type ApprovalDenied struct {
	V         int    `json:"v"`
	CallID    string `json:"call_id"`
	Key       string `json:"key"`
	Tool      string `json:"tool"`
	Scope     string `json:"scope"` // once, session, cancelled or client_error (the editor failed to ask)
	Pattern   string `json:"pattern,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
}

// Interrupted keeps what the model had said when the turn was cut short.
type Interrupted struct {
	V        int    `json:"v"`
	Text     string `json:"text,omitempty"`
	Thinking string `json:"thinking,omitempty"`
	Reason   string `json:"reason"` // cancelled, provider_error, restart, write_failed
}

// Compaction replaces the events up to Through with a summary.
type Compaction struct {
	V           int      `json:"v"`
	Through     int64    `json:"through"`
	Summary     string   `json:"summary"`
	Goal        string   `json:"goal"`
	Constraints []string `json:"constraints,omitempty"`
	Decisions   []string `json:"decisions,omitempty"`
	Done        []string `json:"done,omitempty"`
	InProgress  []string `json:"in_progress,omitempty"`
	Handles     []string `json:"handles,omitempty"`
	// WindowBefore is what the request that called for the compaction
	// took of the window, in tokens (the next context_assembled says what
	// the window took after it).
	WindowBefore int `json:"window_before,omitempty"`
	// Pieces are the summaries this compaction made, one per stretch of
	// original events not covered before; the fields above compose them
	// with the pieces of earlier compactions. An older log's compaction
	// has none: it is one piece, from the start through Through.
	Pieces []SummaryPiece `json:"pieces,omitempty"`
}

// SummaryPiece is the summary of one stretch of original events, made
// once: a later compaction composes it, never summarizes it again.
type SummaryPiece struct {
	From        int64    `json:"from"`
	Through     int64    `json:"through"`
	Goal        string   `json:"goal,omitempty"`
	Constraints []string `json:"constraints,omitempty"`
	Decisions   []string `json:"decisions,omitempty"`
	Done        []string `json:"done,omitempty"`
	InProgress  []string `json:"in_progress,omitempty"`
	Handles     []string `json:"handles,omitempty"`
	Summary     string   `json:"summary,omitempty"`
}

// ConstraintPinned is a rule the agent must keep for the whole session.
type ConstraintPinned struct {
	V      int    `json:"v"`
	Text   string `json:"text"`
	Source string `json:"source"` // user, model, compaction
	// Redacted names the secrets replaced in a pin the user typed (see
	// UserMessage.Redacted).
	Redacted []string `json:"redacted,omitempty"`
}

// DecisionRecorded is a choice that later turns must respect.
type DecisionRecorded struct {
	V      int    `json:"v"`
	Text   string `json:"text"`
	Source string `json:"source"`
	// Redacted names the secrets replaced in a pin the user typed (see
	// UserMessage.Redacted).
	Redacted []string `json:"redacted,omitempty"`
}

// PlanUpdated is the whole current plan, as the model's plan tool last
// set it: each update replaces the one before.
type PlanUpdated struct {
	V       int         `json:"v"`
	Entries []PlanEntry `json:"entries"`
}

// FileRestore is one file a rewind puts back: To is the hash of the
// content it gets ("" removes the file), From the hash it had ("" when it
// did not exist); both contents are kept as checkpoints.
type FileRestore struct {
	Path string `json:"path"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Mode is the permission bits a file made anew gets (0: 0644); for a
	// file the restore removes (To empty), the mode it had, for an undo.
	Mode uint32 `json:"mode,omitempty"`
}

// RewindStarted is a rewind's plan, recorded before any file is touched:
// a rewind a crash cut short is finished from it on restart.
type RewindStarted struct {
	V int `json:"v"`
	// Turn is the prompt (counted from 1) the session goes back to before;
	// From is its seq: the model no longer sees the events from there to
	// the rewound event that closes the rewind.
	Turn  int           `json:"turn"`
	From  int64         `json:"from"`
	Files []FileRestore `json:"files,omitempty"`
	// Undoes is the seq of the rewound event this rewind takes back (0:
	// none): its files go back, and the window sees its prompts again.
	Undoes int64 `json:"undoes,omitempty"`
}

// Rewound closes a rewind: the files put back, and those left alone
// (changed by the user since the agent, and the user said no).
type Rewound struct {
	V        int           `json:"v"`
	Turn     int           `json:"turn"`
	From     int64         `json:"from"`
	Restored []FileRestore `json:"restored,omitempty"`
	Kept     []string      `json:"kept,omitempty"`
	Undoes   int64         `json:"undoes,omitempty"`
}

// PlanEntry is one step of a plan.
type PlanEntry struct {
	Content string `json:"content"`
	// Status is pending, in_progress or completed.
	Status string `json:"status"`
}

// Mark is the step's status as a checkbox: [x] completed, [>] in
// progress, [ ] pending.
func (e PlanEntry) Mark() string {
	switch e.Status {
	case "completed":
		return "[x]"
	case "in_progress":
		return "[>]"
	}
	return "[ ]"
}

// ContextAssembled reports how one request filled the window.
type ContextAssembled struct {
	V           int    `json:"v"`
	Window      int    `json:"window"`
	FixedPrefix int    `json:"fixed_prefix"`
	TaskPins    int    `json:"task_pins"`
	History     int    `json:"history"`
	ToolOutputs int    `json:"tool_outputs"`
	Slack       int    `json:"slack"`
	Action      string `json:"action"` // none, drop_outputs, compact, squeeze
	PrefixHash  string `json:"prefix_hash,omitempty"`
	// Dropped lists the tool results (by seq) whose outputs this assembly
	// replaced by an address. Later assemblies keep them dropped, so the
	// prompt cache breaks once per batch, not every turn.
	Dropped []int64 `json:"dropped,omitempty"`
	// Raw is the request's token count before correction, and Ratio the
	// per-session correction applied to estimated counts (reported usage
	// over estimate; 1 for exact tokenizers).
	Raw     int     `json:"raw,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
	Counter string  `json:"counter,omitempty"` // o200k_base, cl100k_base, estimate
}

// Used returns the tokens the request occupies.
func (c ContextAssembled) Used() int { return c.FixedPrefix + c.TaskPins + c.History + c.ToolOutputs }

// ModeChanged records a switch of tool registry.
type ModeChanged struct {
	V    int    `json:"v"`
	From string `json:"from"`
	To   string `json:"to"`
}

// ModelChanged records an explicit change of the pinned model.
type ModelChanged struct {
	V    int    `json:"v"`
	From string `json:"from"`
	To   string `json:"to"`
}

// FileChanged notes that a file the model had read changed on disk
// afterwards, by the user or by a command: the model sees a note, and its
// stale outputs are the first to drop.
type FileChanged struct {
	V int `json:"v"`
	// Path is absolute; Shown is how the model knows it (relative to the
	// session's directory).
	Path  string `json:"path"`
	Shown string `json:"shown,omitempty"`
	// Turn is the prompt (counted from 1) in which the model read it.
	Turn int `json:"turn,omitempty"`
	// Version is the file's version now; "" when it was deleted.
	Version string `json:"version,omitempty"`
}

// SubagentStarted links a child session to the task call that starts it.
// It is committed before the child session is created, so a restart
// always knows which child a call had.
type SubagentStarted struct {
	V       int    `json:"v"`
	CallID  string `json:"call_id"`
	ChildID string `json:"child_id"`
	Prompt  string `json:"prompt"`
	// Key is the task call's idempotency key.
	Key         string `json:"key,omitempty"`
	Description string `json:"description,omitempty"`
	// Tools are the names the child may use (its mode is the parent's).
	Tools []string `json:"tools,omitempty"`
	// MaxTurns and MaxTokens are its budget: model calls and tokens.
	MaxTurns  int `json:"max_turns,omitempty"`
	MaxTokens int `json:"max_tokens,omitempty"`
}

// SubagentFinished records the child's final answer, as the parent's
// model reads it in the task call's result.
type SubagentFinished struct {
	V       int    `json:"v"`
	CallID  string `json:"call_id"`
	ChildID string `json:"child_id"`
	Answer  string `json:"answer"`
	// Status is completed, budget_exhausted, cancelled, failed or
	// interrupted (by a restart).
	Status string `json:"status"`
	Key    string `json:"key,omitempty"`
	// Turns and Tokens are what the child used of its budget.
	Turns  int `json:"turns,omitempty"`
	Tokens int `json:"tokens,omitempty"`
}

// HookRan records one hook the settings ran (config.Hook): what ran, its
// verdict and how long it took. Key says where in the loop: the call's
// key and the hook's place for PreToolUse and PostToolUse
// ("<call key>/PreToolUse/0"), the opening event's seq for the others. A
// resumed turn that meets a Key already recorded takes the verdict as
// recorded and does not run the hook again.
type HookRan struct {
	V       int    `json:"v"`
	Key     string `json:"key"`
	Event   string `json:"event"`
	Command string `json:"command"`
	// Whose is "user" or "project"; File the settings file.
	Whose string `json:"whose"`
	File  string `json:"file,omitempty"`
	// Tool and CallID name the call of a tool event.
	Tool   string `json:"tool,omitempty"`
	CallID string `json:"call_id,omitempty"`
	// Verdict is allow, deny, context (allowed, with Context for the
	// model) or failed (it did not answer: a non-zero exit other than 2,
	// a timeout, a signal; Reason says which). A failed hook allows.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Context string `json:"context,omitempty"`
	// ExitCode and DurationMS are how it ended.
	ExitCode   int   `json:"exit_code"`
	DurationMS int64 `json:"duration_ms"`
}

// TurnFinished closes a prompt.
type TurnFinished struct {
	V          int    `json:"v"`
	StopReason string `json:"stop_reason"`
	Iterations int    `json:"iterations,omitempty"`
}

// ProviderError records a failed model call.
type ProviderError struct {
	V         int    `json:"v"`
	Provider  string `json:"provider"`
	ErrKind   string `json:"kind"`
	Status    int    `json:"status,omitempty"`
	Message   string `json:"message"`
	Attempt   int    `json:"attempt,omitempty"`
	Retryable bool   `json:"retryable,omitempty"`
	// Final says the turn ended on this error; earlier attempts were retried.
	Final bool `json:"final,omitempty"`
}

func (SessionStarted) Kind() Kind   { return KindSessionStarted }
func (UserMessage) Kind() Kind      { return KindUserMessage }
func (AssistantMessage) Kind() Kind { return KindAssistantMessage }
func (ToolStarted) Kind() Kind      { return KindToolStarted }
func (ToolResult) Kind() Kind       { return KindToolResult }
func (ApprovalRequest) Kind() Kind  { return KindApprovalRequest }
func (ApprovalGranted) Kind() Kind  { return KindApprovalGranted }
func (ApprovalDenied) Kind() Kind   { return KindApprovalDenied }
func (Interrupted) Kind() Kind      { return KindInterrupted }
func (Compaction) Kind() Kind       { return KindCompaction }
func (ConstraintPinned) Kind() Kind { return KindConstraintPinned }
func (DecisionRecorded) Kind() Kind { return KindDecisionRecorded }
func (ContextAssembled) Kind() Kind { return KindContextAssembled }
func (ModeChanged) Kind() Kind      { return KindModeChanged }
func (ModelChanged) Kind() Kind     { return KindModelChanged }
func (FileChanged) Kind() Kind      { return KindFileChanged }
func (SubagentStarted) Kind() Kind  { return KindSubagentStarted }
func (SubagentFinished) Kind() Kind { return KindSubagentFinished }
func (TurnFinished) Kind() Kind     { return KindTurnFinished }
func (ProviderError) Kind() Kind    { return KindProviderError }
func (PlanUpdated) Kind() Kind      { return KindPlanUpdated }
func (RewindStarted) Kind() Kind    { return KindRewindStarted }
func (Rewound) Kind() Kind          { return KindRewound }
func (HookRan) Kind() Kind          { return KindHookRan }
func (CommandFinished) Kind() Kind  { return KindCommandFinished }

var decoders = map[Kind]func([]byte) (Payload, int, error){
	KindSessionStarted:   decode[SessionStarted],
	KindUserMessage:      decode[UserMessage],
	KindAssistantMessage: decode[AssistantMessage],
	KindToolStarted:      decode[ToolStarted],
	KindToolResult:       decode[ToolResult],
	KindApprovalRequest:  decode[ApprovalRequest],
	KindApprovalGranted:  decode[ApprovalGranted],
	KindApprovalDenied:   decode[ApprovalDenied],
	KindInterrupted:      decode[Interrupted],
	KindCompaction:       decode[Compaction],
	KindConstraintPinned: decode[ConstraintPinned],
	KindDecisionRecorded: decode[DecisionRecorded],
	KindContextAssembled: decode[ContextAssembled],
	KindModeChanged:      decode[ModeChanged],
	KindModelChanged:     decode[ModelChanged],
	KindFileChanged:      decode[FileChanged],
	KindSubagentStarted:  decode[SubagentStarted],
	KindSubagentFinished: decode[SubagentFinished],
	KindTurnFinished:     decode[TurnFinished],
	KindProviderError:    decode[ProviderError],
	KindPlanUpdated:      decode[PlanUpdated],
	KindRewindStarted:    decode[RewindStarted],
	KindRewound:          decode[Rewound],
	KindHookRan:          decode[HookRan],
	KindCommandFinished:  decode[CommandFinished],
}

// decode parses a payload of type T and returns it with its version
// (every payload type has an int field V): one pass over the bytes.
func decode[T Payload](data []byte) (Payload, int, error) {
	var p T
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, 0, err
	}
	return p, int(reflect.ValueOf(&p).Elem().FieldByName("V").Int()), nil
}

// Stamp returns p with its version field set to this bridle's Version.
// Every payload type has an int field V.
func Stamp(p Payload) Payload {
	v := reflect.ValueOf(p)
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	c.FieldByName("V").SetInt(Version)
	return c.Interface().(Payload)
}

// Encode returns p's stored form, with its version set.
func Encode(p Payload) ([]byte, error) {
	b, err := json.Marshal(Stamp(p))
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", p.Kind(), err)
	}
	return b, nil
}

// Decode parses a stored payload of the given kind.
func Decode(kind Kind, data []byte) (Payload, error) {
	dec, ok := decoders[kind]
	if !ok {
		return nil, fmt.Errorf("unknown event kind %q (written by a newer bridle?)", kind)
	}
	p, v, err := dec(data)
	if err != nil {
		// A newer bridle's payload may not fit this one's type: say so
		// rather than how it does not fit.
		var ver struct {
			V int `json:"v"`
		}
		if json.Unmarshal(data, &ver) == nil && ver.V > Version {
			v = ver.V
		} else {
			return nil, fmt.Errorf("decode %s event: %w", kind, err)
		}
	}
	if v > Version {
		return nil, fmt.Errorf("%s event has version %d; this bridle reads up to %d: upgrade bridle", kind, v, Version)
	}
	return p, nil
}
