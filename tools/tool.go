package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridle-dev/bridle/lsp"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/sandbox/fslock"
)

// Kind tells an editor how to show a tool call (ACP's ToolKind).
type Kind string

const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindThink   Kind = "think"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// Location is a file (and line) a call touches. Path is absolute, as ACP
// wants it.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// Diff is an edit as an editor shows it. Path is absolute; the texts are
// redacted.
type Diff struct {
	Path    string  `json:"path"`
	OldText *string `json:"old_text,omitempty"`
	NewText string  `json:"new_text"`
}

// Preview describes a call before it runs: for the editor's tool card and
// for the approval question.
type Preview struct {
	Title     string
	Locations []Location
	Diff      *Diff
	// Diffs are the edits of a call that changes several files (rename):
	// the approval shows them all.
	Diffs []Diff
	// Command is the exact command line for execute tools.
	Command string
	// Host is the host and port a network call reaches
	// ("example.com:443"): a session-wide answer about it covers that
	// host (HostGate).
	Host string
	// Scope, when set, is what a session-wide answer about the call
	// covers, where neither its paths nor its command say it
	// (command_input: the one command written to).
	Scope *permission.Scope
}

// PinKind says what a pin records.
type PinKind string

const (
	PinConstraint PinKind = "constraint"
	PinDecision   PinKind = "decision"
)

// Pin is a constraint or decision the model asked to keep (the remember
// tool). The session appends it as constraint_pinned or decision_recorded.
type Pin struct {
	Kind PinKind
	Text string
}

// Result is what a call produced. Its texts are redacted by the tool,
// but for an error's Output that is not marked Redacted (Errorf's, which
// may quote the input): the session redacts that one.
type Result struct {
	// Output is what the model reads.
	Output  string
	IsError bool
	// Redacted says Output was redacted where it was made (a capture's
	// is, CapOutput's too), so the session leaves an error's as it is: a
	// failing command's output is not redacted twice.
	Redacted  bool
	Diff      *Diff
	Locations []Location
	// Artifact names the file holding the whole output when Output was
	// capped (read it with read_artifact).
	Artifact string
	// Lines and Bytes measure the whole output, before any cap.
	Lines, Bytes int
	// Pin is set by the remember tool.
	Pin *Pin
	// Plan is the whole plan the plan tool set (PlanSet: an empty Plan
	// clears it).
	Plan    []PlanStep
	PlanSet bool
	// Missing lists the confinement layers this machine lacks that a
	// command ran without; they are also named in Output.
	Missing []string
	// Unwatched says why Env.Writes was not told what the command
	// changed ("" when it was, or when it was not set).
	Unwatched string
	// Background is the id of the command this call started in the
	// background: its card stays live until the command ends.
	Background string
	// Edits are the files a MultiPlanner's call changed, as planned: the
	// session records them as a command's changes (a rewind puts them
	// back).
	Edits []FileEdit
}

// Errorf returns an error result the model can read.
func Errorf(format string, args ...any) Result {
	return Result{Output: fmt.Sprintf(format, args...), IsError: true}
}

// Env is what a call may touch. The session builds one per call.
type Env struct {
	// Root is the workspace.
	Root *confine.Root
	// Key is the call's idempotency key; artifacts are named after it.
	Key string
	// Artifacts is where capped outputs are spilled. Nil: the rest of a
	// capped output is dropped, and the result says so.
	Artifacts *Artifacts
	// Redactor removes secrets from everything a tool returns. Nil: only
	// the built-in token formats are redacted.
	Redactor *redact.Redactor
	// Buffers, when the editor offers both halves of them, is how
	// read_file, edit_file and write_file read and write files that exist
	// (see buffers.go). Nil: the disk.
	Buffers Buffers
	// Texts, with Buffers, holds what bridle last read from or wrote to
	// the editor's buffers: an edit of a file the model read is planned
	// on that text and checked against the editor once, before it is
	// written. Nil: every plan asks the editor.
	Texts *BufferTexts
	// Locks keeps the editor's file calls and commands apart, across
	// sessions and bridle processes (sandbox/fslock). Nil: nothing is
	// kept apart.
	Locks *fslock.Locks
	// Live, when set, is shown the end of a running command's output as
	// it comes, redacted, at most every 250 ms (see live.go).
	Live func(tail string)
	// Waiting, when set, is told when the call starts to wait for a
	// command to end before it asks the editor about a file (see
	// holdEditor); the session shows it on the call's card.
	Waiting func(note string)
	// Writes, when set, is told of each file of the workspace a command
	// is about to change, before it changes it (a tool that can:
	// WritesWatcher).
	Writes box.Writes
	// Results returns the output of the tool result at a seq of the
	// session's log, as the model saw it: read_artifact serves "r<seq>",
	// the address of a dropped output that has no artifact.
	Results func(seq int64) (string, error)
	// Code, when set, is what the workspace's language servers say: the
	// edit tools end their results with the diagnostics an edit
	// introduced. Nil: no server.
	Code Code
	// Background is the session's commands running in the background
	// (run_command with background, command_output, command_input,
	// command_stop). Nil: none can be started.
	Background *Background

	// Fetched caches the session's web_fetch results. Nil: none is.
	Fetched *Fetched

	// call is set by ForCall: what Preview, Plan and Run of one call share.
	call *callMemo
	// noWait is set by WithoutWaiting.
	noWait bool
}

// WithoutWaiting returns a copy of the Env whose questions to the editor
// do not wait for a command that can write the file to end: they fail at
// once (fslock.ErrBusy). A call's card is previewed with it before the
// card is shown, which must not be held back and has nowhere to say why;
// the copy shares the call's memo, so a plan it makes is the call's.
func (e *Env) WithoutWaiting() *Env {
	c := *e
	c.noWait = true
	return &c
}

func (e *Env) redact(s string) string { return e.Redactor.Redact(s) }

// Tool is one capability offered to the model.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON Schema of the tool's input. Registry.Check
	// validates a call's input against it before Preview or Run.
	Schema() json.RawMessage
	Kind() Kind
	Effect() permission.Effect
	// Preview describes a call with input without running it. An error
	// means the input is invalid; it is given to the model as the result.
	// ctx is the turn's: an edit's preview may ask the editor for the
	// file, and a cancel must not wait for the answer.
	Preview(ctx context.Context, env *Env, input json.RawMessage) (Preview, error)
	Run(ctx context.Context, env *Env, input json.RawMessage) Result
}

// Code is what language servers say of the workspace's code (package
// lsp implements it).
type Code interface {
	// Edited tells the servers of path (absolute) that it now holds
	// after (before: what it held, nil for a new file) and returns what
	// the model should read of it: the diagnostics the change
	// introduced, in a few lines ("" when no server serves the file).
	Edited(ctx context.Context, path string, before, after []byte) string
	// Changed tells the servers that are running that a command changed
	// these files on disk (absolute paths), and returns what the model
	// should read of it: the diagnostics the changes introduced ("" when
	// no running server serves them); it starts none.
	Changed(ctx context.Context, paths []string) string
	// EditedFiles is Edited for an edit of several files at once (a
	// rename): the servers hear of them together.
	EditedFiles(ctx context.Context, files []lsp.FileText) string
}

// diagnosed ends an edit's output with what the language servers say of
// it, redacted: the servers read the workspace's files.
func diagnosed(ctx context.Context, env *Env, out, path string, before, after []byte) string {
	if env.Code == nil {
		return out
	}
	note := env.Code.Edited(ctx, path, before, after)
	if note == "" {
		return out
	}
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out + env.redact(note) + "\n"
}

// A WritesWatcher is a tool that can tell Env.Writes of every file of
// the workspace it is about to change (run_command, in a box that can):
// WatchesWrites says why it cannot, nil when it can.
type WritesWatcher interface {
	WatchesWrites() error
}

// FileEdit is the effect an edit would have on one file, computed without
// applying it. The session records the hashes in tool_started so that a
// restart can tell whether the edit already landed (HashFile of the path
// equals After) or not yet (equals Before).
type FileEdit struct {
	// Path is absolute.
	Path string
	// Before is the file's hash now ("" when it does not exist); After is
	// its hash once the edit is applied.
	Before, After string
	Diff          *Diff
	// Old is the content Before hashes, as the plan read it: what a
	// checkpoint keeps, without reading the file again.
	Old []byte
	// from is where Old was last read (the editor's buffer or the disk):
	// the write goes there, or elsewhere only if that holds Old too
	// (writeFileText).
	from textSource
}

// Planner is implemented by tools that edit files.
type Planner interface {
	Plan(ctx context.Context, env *Env, input json.RawMessage) (FileEdit, error)
}
