package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bridle-dev/bridle/sandbox/fslock"
)

// Buffers reads and writes files through the editor (ACP's
// fs/read_text_file and fs/write_text_file): a read sees the text the user
// has not saved yet, and a write lands in the editor, whose undo and
// review see it, instead of behind its back. Paths are absolute and have
// been confined by the Root first: the editor is only ever asked about a
// file the tool could have opened itself.
type Buffers interface {
	// CanRead and CanWrite say which of the two the editor offers.
	CanRead() bool
	CanWrite() bool
	// ReadText and WriteText return when the editor answers or ctx
	// ends. When ctx ends first, late is closed once the editor answers
	// after all (or the connection ends): until then it may still open
	// the file.
	ReadText(ctx context.Context, path string) (text string, late <-chan struct{}, err error)
	WriteText(ctx context.Context, path, content string) (late <-chan struct{}, err error)
}

// BufferTimeout bounds one question to the editor: an editor that does
// not answer must not hang a tool.
const BufferTimeout = 10 * time.Second

// maxBufferRead is the largest file read through the editor; larger ones
// are read from disk, streamed (the editor would send them whole).
const maxBufferRead = 8 << 20

// Where a file's text came from, as a result says it.
const (
	viaDisk   = ""
	viaEditor = "editor"
	// viaDiskBackground: on disk, though the editor offers buffers: a
	// command in the background could change what the path leads to
	// (onDisk).
	viaDiskBackground = "disk-background"
)

// usesEditor says whether files go through the editor: only when it
// offers both halves of fs. An edit is planned on the text it replaces
// and written where that text is; with one half, it would be planned on
// the buffer and written to the disk behind it, or planned on the disk
// and written over the buffer's unsaved text.
func (e *Env) usesEditor() bool {
	return e != nil && e.Buffers != nil && e.Buffers.CanRead() && e.Buffers.CanWrite()
}

// UsesEditor says whether the session's files are read and written
// through the editor (see usesEditor).
func (e *Env) UsesEditor() bool { return e.usesEditor() }

// editorCall is a question to the editor about a file, announced
// (fslock): from before bridle checks the path until the editor is done
// with the question, no command that could swap the file for a link runs,
// in any session.
type editorCall struct {
	release func()
	// late is set when bridle stopped waiting before the editor answered
	// (the turn ended, the question's time bound passed): the editor may
	// still open the file until it answers.
	late <-chan struct{}
}

// commandWait bounds how long a question to the editor about a file
// waits for a command that can write there to end: one of another
// session, or of another bridle window, whose workspace holds the file
// (a session at the home directory, another window's test run). Commands
// may run for minutes; an edit must not hold its turn that long. Commands
// wait as long for the editor (editorWait).
const commandWait = 30 * time.Second

// errWaitedOut is why an edit gave up waiting for a command to end.
var errWaitedOut = fmt.Errorf("a command that can write there (of another session, or another bridle window, whose workspace holds this file) was still running after %v, and the editor is not asked about a file while one runs: retry once it has ended", commandWait)

// holdEditor announces a question to the editor about path. Without wait
// it fails at once if a command that could change what path leads to is
// running; with wait it waits for such commands to end, up to
// commandWait, saying so on the call's card (Env.Waiting), unless the Env
// does not wait (WithoutWaiting).
func holdEditor(ctx context.Context, env *Env, path string, wait bool) (*editorCall, error) {
	abs := env.Root.Abs(path)
	release, err := env.Locks.Editor(ctx, abs, false)
	if errors.Is(err, fslock.ErrBusy) && !errors.Is(err, fslock.ErrBackground) && wait && !env.noWait {
		if env.Waiting != nil {
			env.Waiting(fmt.Sprintf("[waiting for a command of another session (or another bridle window) that can write %s to end, up to %v: the editor is not asked about a file while one runs]", path, commandWait))
		}
		wctx, cancel := context.WithTimeout(ctx, commandWait)
		release, err = env.Locks.Editor(wctx, abs, true)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = errWaitedOut
		}
	}
	switch {
	case errors.Is(err, fslock.ErrBusy):
		return nil, fmt.Errorf("%s: %w; the editor is not asked while one runs", path, err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &editorCall{release: release}, nil
}

// done ends the announcement once the editor is done with the question:
// now if it answered, else when its late answer comes.
func (c *editorCall) done() {
	if c.late == nil {
		c.release()
		return
	}
	go func() {
		<-c.late
		c.release()
	}()
}

// bufferText asks the editor for the text of a confined file, at abs
// (Root.EditorPath); path is as the model named it.
func bufferText(ctx context.Context, env *Env, call *editorCall, abs, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, BufferTimeout)
	defer cancel()
	text, late, err := env.Buffers.ReadText(ctx, abs)
	call.late = late
	if err != nil {
		return "", fmt.Errorf("the editor could not give %s: %w", path, err)
	}
	return text, nil
}

// openRead opens a file for read_file, through the Root. When the editor's
// buffers are used and it is a regular file of at most maxBufferRead
// bytes, the editor is asked for its text too: buf is then that text, or
// disk says why the file's own content is read instead. A read changes
// nothing, so it never waits for a command to end: while one runs, the
// disk is read.
func openRead(ctx context.Context, env *Env, path string) (f *os.File, fi fs.FileInfo, buf *string, disk, err error) {
	if !env.usesEditor() {
		f, fi, err = env.Root.Open(path)
		return f, fi, nil, nil, err
	}
	call, busy := holdEditor(ctx, env, path, false)
	if busy == nil {
		defer call.done()
	}
	f, fi, err = env.Root.Open(path) // checked inside the announcement
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxBufferRead {
		return f, fi, nil, nil, err
	}
	if busy != nil {
		return f, fi, nil, busy, nil
	}
	abs, err := env.Root.EditorPath(path, fi)
	if err != nil {
		return f, fi, nil, err, nil
	}
	text, err := bufferText(ctx, env, call, abs, path)
	if err != nil {
		env.Texts.drop(abs)
		return f, fi, nil, err, nil
	}
	env.Texts.put(abs, text)
	return f, fi, &text, nil, nil
}

// editorPath opens path through the Root, inside the editor call's
// announcement, and returns the absolute path the editor is to be given
// for it: one that leads, by name, to the file opened (Root.EditorPath).
func editorPath(env *Env, path string) (string, error) {
	f, fi, err := env.Root.Open(path)
	if err != nil {
		return "", err
	}
	f.Close()
	return env.Root.EditorPath(path, fi)
}

// textSource is where the text an edit is planned on was read: the
// editor's buffer or the disk. In a session with the editor's buffers the
// two can differ (the buffer's unsaved changes), and which is read
// changes when a command in the background starts or ends (onDisk), so
// a write goes where its plan was read, or elsewhere only if that holds
// the same text (writeFileText).
type textSource uint8

const (
	// fromAnywhere: not said (a rewind's plan hashes a file wherever it
	// was read then: PutFile); the write goes where files go now, and
	// only if the text there is still the planned-on one.
	fromAnywhere textSource = iota
	fromDisk
	fromEditor
)

// readFileText returns a file's content as an edit starts from: the
// editor's buffer when it offers buffers (where the user may have unsaved
// text that a write through the editor must not lose), else the disk. The
// file is checked through the Root first either way. exists is false when
// there is no such file; from says where the content was read, for the
// write (plannedOn).
func readFileText(ctx context.Context, env *Env, path string) (content []byte, exists bool, from textSource, err error) {
	if _, err := env.Root.Lstat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "does not exist") {
			return nil, false, fromAnywhere, nil
		}
		return nil, false, fromAnywhere, err
	}
	if !env.usesEditor() {
		data, err := env.Root.ReadFile(path, MaxEditBytes)
		if err != nil {
			return nil, false, fromDisk, err
		}
		return data, true, fromDisk, nil
	}
	// No fallback to the disk: an edit planned on the disk's text and
	// written through the editor would drop the user's unsaved changes.
	// But for onDisk: then the edit is written on disk too, or, if the
	// command has ended by then, through the editor only if its buffer
	// holds what the disk held (writeFileText).
	call, err := holdEditor(ctx, env, path, true)
	if onDisk(err) {
		data, err := env.Root.ReadFile(path, MaxEditBytes)
		if err != nil {
			return nil, false, fromDisk, err
		}
		return data, true, fromDisk, nil
	}
	if err != nil {
		return nil, false, fromEditor, fmt.Errorf("%w; nothing was changed", err)
	}
	defer call.done()
	abs, err := editorPath(env, path) // confined as a read would be, inside the announcement
	if err != nil {
		return nil, false, fromEditor, fmt.Errorf("%w; nothing was changed", err)
	}
	text, err := bufferText(ctx, env, call, abs, path)
	if err != nil {
		env.Texts.drop(abs)
		return nil, false, fromEditor, fmt.Errorf("%w; nothing was changed", err)
	}
	env.Texts.put(abs, text)
	if len(text) > MaxEditBytes {
		return nil, false, fromEditor, fmt.Errorf("%s is %d bytes in the editor, over the %d-byte limit for edits", path, len(text), MaxEditBytes)
	}
	return []byte(text), true, fromEditor, nil
}

// plannedOn is what a write was planned on: the hash of the file's text
// ("" for no file) and where that text was last read.
type plannedOn struct {
	before string
	from   textSource
}

// on is what fe was planned on.
func (fe FileEdit) on() plannedOn { return plannedOn{before: fe.Before, from: fe.from} }

// errSourceChanged refuses a write that would go elsewhere than where
// its plan was read (a command in the background started or ended in
// between) to a place that does not hold the planned-on text.
var errSourceChanged = errors.New("a command in the background started or ended while this edit was planned, so it would be written elsewhere than where the file was read (the editor's buffer, or the disk), and the two differ (the buffer has unsaved changes, or the disk was changed): nothing was changed; read the file again and redo the edit")

// errChangedSincePlanned refuses a write of PutFile (a rewind's) whose
// destination no longer holds the text its plan hashed, nor already the
// text to write: the text there now was never kept, so writing over it
// would lose it for good.
var errChangedSincePlanned = errors.New("its text changed since the rewind read it (edited, or the editor's buffer holds unsaved changes: while a command runs in the background files are read and written on disk, else through the editor, and one started or ended meanwhile), and what it holds now was not kept: it was not written, so nothing is lost; rewind again to put it back")

// stillHolds says whether the text at the write's destination is what the
// write was planned on; text is that text, read there. done is set when
// it holds data already: nothing is to be written (a rewind a crash cut
// short, run again).
func (on plannedOn) stillHolds(path string, text, data []byte) (done bool, err error) {
	switch {
	case Hash(text) == on.before:
		return false, nil
	case bytes.Equal(text, data):
		return true, nil
	case on.from == fromAnywhere:
		return false, fmt.Errorf("%s: %w", path, errChangedSincePlanned)
	}
	return false, fmt.Errorf("%s: %w", path, errSourceChanged)
}

// doneVia is where a write found its text already in place, if it did.
func doneVia(done bool, via string) string {
	if !done {
		return ""
	}
	return via
}

// diskHolds reads the file on disk and says whether the write planned on
// is still to be done there (stillHolds).
func diskHolds(env *Env, path string, data []byte, on plannedOn) (done bool, err error) {
	now, err := env.Root.ReadFile(path, MaxEditBytes)
	if err != nil {
		return false, fmt.Errorf("%w; nothing was changed", err)
	}
	return on.stillHolds(path, now, data)
}

// writeFileText replaces a file's content: through the editor when it
// offers buffers (the editor then holds the new text; it saves it as the
// user's settings say), else atomically on disk. A new file goes through
// the editor too, so its review and undo see it, unless its content is
// binary or over maxBufferRead (newThroughEditor): those are made on disk.
// The directories a new file needs are made on disk first, through the
// Root: ACP does not say an editor makes them. It returns where it wrote.
//
// on is what the write was planned on. A plan read from the disk while a
// command ran in the background (onDisk) is written through the editor,
// once that command has ended, only if the buffer holds the text the plan
// read: else the buffer's unsaved changes would be replaced by the disk's
// text and the edit. The other way, a plan read from the buffer is
// written on disk, once a command runs in the background, only if the
// disk holds that text: else the buffer's unsaved changes would be saved
// for the user, over what the disk holds (which the command may have just
// written). Either way the refusal asks the model to read the file again.
// A plan that does not say where it was read (fromAnywhere: a rewind's)
// is checked wherever the write goes, and not written where the text is
// already data.
func writeFileText(ctx context.Context, env *Env, path string, data []byte, exists bool, on plannedOn) (string, error) {
	if !env.usesEditor() || !exists && !newThroughEditor(data) {
		if exists && on.from == fromAnywhere {
			if done, err := diskHolds(env, path, data, on); done || err != nil {
				return doneVia(done, viaDisk), err
			}
		}
		return viaDisk, env.Root.WriteFile(path, data)
	}
	call, err := holdEditor(ctx, env, path, true)
	if onDisk(err) {
		if exists && on.from != fromDisk {
			if done, err := diskHolds(env, path, data, on); done || err != nil {
				return doneVia(done, viaDiskBackground), err
			}
		}
		return viaDiskBackground, env.Root.WriteFile(path, data)
	}
	if err != nil {
		return "", fmt.Errorf("%w; nothing was changed", err)
	}
	defer call.done()
	// Confined as a write would be: not hidden, and the file itself
	// opens inside the workspace (no link out).
	if err := env.Root.CheckWrite(path); err != nil {
		return "", err
	}
	var abs string
	if exists {
		abs, err = editorPath(env, path)
	} else {
		// Refused if the name was taken since the write was planned on
		// no file: the plan, and the hashes tool_started recorded for a
		// restart, are of a file that did not exist.
		abs, err = env.Root.NewFileEditorPath(path, true)
	}
	if err != nil {
		return "", fmt.Errorf("%w; nothing was changed", err)
	}
	if exists && on.from != fromEditor {
		text, err := bufferText(ctx, env, call, abs, path)
		if err != nil {
			return "", fmt.Errorf("%w; nothing was changed", err)
		}
		if done, err := on.stillHolds(path, []byte(text), data); done || err != nil {
			return doneVia(done, viaEditor), err
		}
	}
	if !exists {
		// The editor may hold text for a name with no file on disk: a
		// buffer the user has not saved, which the write would replace
		// unseen (the model planned on no file). An editor that holds none
		// says so by an error or no text; one that does not answer in
		// time is not written to.
		text, err := bufferText(ctx, env, call, abs, path)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return "", fmt.Errorf("%w; nothing was changed", err)
		case err == nil && text != "" && text != string(data):
			return "", fmt.Errorf("the editor holds unsaved text for %s, which has no file on disk; nothing was changed: read it with read_file, or ask the user to save or close it", path)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, BufferTimeout)
	defer cancel()
	late, err := env.Buffers.WriteText(ctx, abs, string(data))
	call.late = late
	if err != nil {
		env.Texts.drop(abs) // the editor may hold either text now
		// Not written to disk instead: the editor's buffer may hold text
		// the user has not saved, which a later save would write over ours
		// (or ours over theirs); a new file's buffer may have been made.
		return "", fmt.Errorf("the editor did not take the new text of %s (%v); bridle did not write the file either: read it again before retrying", path, err)
	}
	env.Texts.put(abs, string(data))
	return viaEditor, nil
}

// onDisk says whether holdEditor's error is that a command running in the
// background could change what the path leads to (fslock.ErrBackground):
// the editor is not asked about the file until it ends, which may be
// hours, so an edit does not wait for it but is planned on the disk and
// written there, through the Root, as in a session without the editor's
// buffers (the Root keeps a command's links from leading it out; the
// editor's open would follow them). The editor sees the file change on
// disk and reloads it; a buffer of it with unsaved changes is not
// written over by bridle (it was never asked about it): the editor
// keeps it and tells the user the file changed on disk. When the command
// starts or ends between an edit's read and its write, writeFileText
// writes only where the text read still is (plannedOn). Decision: rather
// that than refuse every edit while a dev server runs (bridle cannot ask
// the editor whether the buffer is unsaved), or write into a buffer it
// could not read.
func onDisk(err error) bool { return errors.Is(err, fslock.ErrBackground) }

// newThroughEditor says whether a new file of content data is made
// through the editor: text (valid UTF-8 without NUL bytes, as read_file
// shows) of at most maxBufferRead bytes, what a buffer holds and gives
// back byte for byte. Anything else is made on disk.
func newThroughEditor(data []byte) bool {
	return len(data) <= maxBufferRead && utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// unsavedNewText returns the text the editor holds for path when the file
// does not exist on disk: an editor that does not save what it is sent
// holds a file bridle created through it only in a buffer. ok is false
// when it holds none (no such buffer, an empty one, or it could not say).
// A restart and a rewind compare it with what tool_started recorded.
func unsavedNewText(ctx context.Context, env *Env, path string) (text string, ok bool) {
	call, err := holdEditor(ctx, env, path, true)
	if err != nil {
		return "", false
	}
	defer call.done()
	abs, err := env.Root.NewFileEditorPath(path, false)
	if err != nil {
		return "", false
	}
	text, err = bufferText(ctx, env, call, abs, path)
	if err != nil || text == "" {
		return "", false
	}
	return text, true
}

// diskIfBinary returns a file's bytes on disk when the editor offers its
// buffers and those bytes are not text: a buffer holds text, so a binary
// file (which a command may have changed) read through the editor would
// not hash as it is, nor come back byte for byte.
func diskIfBinary(env *Env, path string) ([]byte, bool) {
	if !env.usesEditor() {
		return nil, false
	}
	data, err := env.Root.ReadFile(path, MaxEditBytes)
	if err != nil || utf8.Valid(data) {
		return nil, false
	}
	return data, true
}

// viaNote is what a result adds to say where its text came from.
func viaNote(via string) string {
	switch via {
	case viaEditor:
		return " (through the editor)"
	case viaDiskBackground:
		return " (on disk, not through the editor: a command running in the background can write there, so the editor is not asked about the file; it reloads it from disk, and keeps unsaved changes of its own, if any, for the user)"
	}
	return ""
}

// FileContent returns a workspace file's content as an edit would start
// from (the editor's buffer when it offers buffers), or exists=false when
// there is none: what a checkpoint keeps before an edit.
func FileContent(ctx context.Context, env *Env, path string) (content []byte, exists bool, err error) {
	if data, ok := diskIfBinary(env, path); ok {
		return data, true, nil
	}
	data, exists, _, err := readFileText(ctx, env, path)
	return data, exists, err
}

// PutFile replaces a workspace file's content with data as the edit tools
// do: through the editor when it offers buffers, else atomically on disk;
// bytes that are not text always go to disk (see writeFileText). from is
// the hash the file's content had when the write was planned (HashFile,
// whose content was kept): the file is written only if its text where
// the write goes (the buffer, or the disk while a command runs in the
// background) still hashes to from, and is left as it is if it already
// holds data (a write done before, then cut short). Else nothing is
// written and the error says so (errChangedSincePlanned): the text there
// was never kept.
func PutFile(ctx context.Context, env *Env, path string, data []byte, from string) error {
	on := plannedOn{before: from, from: fromAnywhere}
	if !utf8.Valid(data) {
		// On disk: the editor would take it as text, not bytes.
		if done, err := diskHolds(env, path, data, on); done || err != nil {
			return err
		}
		return env.Root.WriteFile(path, data)
	}
	_, err := writeFileText(ctx, env, path, data, true, on)
	return err
}
