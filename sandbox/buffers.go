package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"
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
	ReadText(ctx context.Context, path string) (string, error)
	WriteText(ctx context.Context, path, content string) error
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

// bufferText asks the editor for a confined file's text.
func bufferText(ctx context.Context, env *Env, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, BufferTimeout)
	defer cancel()
	text, err := env.Buffers.ReadText(ctx, env.Root.Abs(path))
	if err != nil {
		return "", fmt.Errorf("the editor could not give %s: %w", path, err)
	}
	return text, nil
}

// readFileText returns a file's content as an edit starts from: the
// editor's buffer when it offers buffers (where the user may have unsaved
// text that a write through the editor must not lose), else the disk. The
// file is checked through the Root first either way. exists is false when
// there is no such file.
func readFileText(ctx context.Context, env *Env, path string) (content []byte, exists bool, err error) {
	if _, err := env.Root.Lstat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "does not exist") {
			return nil, false, nil
		}
		return nil, false, err
	}
	if !env.usesEditor() {
		data, err := env.Root.ReadFile(path, MaxEditBytes)
		if err != nil {
			return nil, false, err
		}
		return data, true, nil
	}
	f, _, err := env.Root.Open(path) // confined as a read would be
	if err != nil {
		return nil, false, err
	}
	f.Close()
	// No fallback to the disk: an edit planned on the disk's text and
	// written through the editor would drop the user's unsaved changes.
	text, err := bufferText(ctx, env, path)
	if err != nil {
		return nil, false, fmt.Errorf("%w; nothing was changed", err)
	}
	if len(text) > MaxEditBytes {
		return nil, false, fmt.Errorf("%s is %d bytes in the editor, over the %d-byte limit for edits", path, len(text), MaxEditBytes)
	}
	return []byte(text), true, nil
}

// writeFileText replaces a file's content: through the editor when it
// offers buffers and the file exists (the editor then holds the new text;
// it saves it as the user's settings say), else atomically on disk. A new
// file is made on disk: no buffer can hold unsaved text for it, and
// missing directories are made with it. It returns where it wrote.
func writeFileText(ctx context.Context, env *Env, path string, data []byte, exists bool) (string, error) {
	if !exists || !env.usesEditor() {
		return viaDisk, env.Root.WriteFile(path, data)
	}
	// Confined as a write would be: not hidden, and the file itself
	// opens inside the workspace (no link out).
	if err := env.Root.CheckWrite(path); err != nil {
		return "", err
	}
	f, _, err := env.Root.Open(path)
	if err != nil {
		return "", err
	}
	f.Close()
	ctx, cancel := context.WithTimeout(ctx, BufferTimeout)
	defer cancel()
	if err := env.Buffers.WriteText(ctx, env.Root.Abs(path), string(data)); err != nil {
		// Not written to disk instead: the editor's buffer may hold text
		// the user has not saved, which a later save would write over ours
		// (or ours over theirs).
		return "", fmt.Errorf("the editor did not take the new text of %s (%v); bridle did not write the file either: read it again before retrying", path, err)
	}
	return viaEditor, nil
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
	if via == viaEditor {
		return " (through the editor)"
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
	return readFileText(ctx, env, path)
}

// PutFile replaces (or creates) a workspace file as the edit tools do:
// through the editor for a file that exists when it offers buffers, else
// atomically on disk; bytes that are not text always go to disk.
func PutFile(ctx context.Context, env *Env, path string, data []byte, exists bool) error {
	if !utf8.Valid(data) {
		exists = false // on disk: the editor would take it as text, not bytes
	}
	_, err := writeFileText(ctx, env, path, data, exists)
	return err
}
