package tools

import (
	"context"
	"slices"
	"sync"
)

// BufferTexts holds the text bridle last read from or wrote to each of the
// editor's buffers, by the path the editor is asked about: what the model
// saw of a file it read. An edit is planned on that text without asking
// the editor again, and asks once, right before it writes, whether the
// buffer still holds it (Env.Texts; see planText and checkedPlan). It is
// a hint: a wrong one costs a question, never a write over text bridle
// has not seen. Safe for concurrent use; nil holds nothing.
type BufferTexts struct {
	mu    sync.Mutex
	texts map[string]string
	order []string // oldest first
	size  int
}

// Bounds of BufferTexts: the texts of the files a session is working on,
// not of every file it read.
const (
	maxBufferTexts     = 64
	maxBufferTextBytes = 16 << 20
)

// NewBufferTexts returns an empty BufferTexts.
func NewBufferTexts() *BufferTexts { return &BufferTexts{texts: map[string]string{}} }

func (b *BufferTexts) get(abs string) (string, bool) {
	if b == nil {
		return "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	text, ok := b.texts[abs]
	return text, ok
}

func (b *BufferTexts) put(abs, text string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropLocked(abs)
	if len(text) > maxBufferTextBytes {
		return
	}
	b.texts[abs] = text
	b.order = append(b.order, abs)
	b.size += len(text)
	for len(b.order) > maxBufferTexts || b.size > maxBufferTextBytes {
		b.dropLocked(b.order[0])
	}
}

func (b *BufferTexts) drop(abs string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropLocked(abs)
}

func (b *BufferTexts) dropLocked(abs string) {
	text, ok := b.texts[abs]
	if !ok {
		return
	}
	delete(b.texts, abs)
	b.size -= len(text)
	if i := slices.Index(b.order, abs); i >= 0 {
		b.order = slices.Delete(b.order, i, i+1)
	}
}

// Clear forgets every text: a command may have changed the files, and
// the editor reloaded their buffers.
func (b *BufferTexts) Clear() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.texts)
	b.order, b.size = nil, 0
}

// planText is readFileText for planning an edit that checkedPlan checks
// before it writes: the text bridle last read from or wrote to the
// file's buffer when it has one (no question to the editor; the path is
// confined all the same), else the editor's answer. fromHint says which;
// from says where the text was read (readFileText).
func planText(ctx context.Context, env *Env, path string) (content []byte, exists bool, from textSource, fromHint bool, err error) {
	if env.usesEditor() {
		if _, err := env.Root.Lstat(path); err == nil {
			if abs, err := editorPath(env, path); err == nil {
				if text, ok := env.Texts.get(abs); ok && len(text) <= MaxEditBytes {
					return []byte(text), true, fromEditor, true, nil
				}
			}
		}
	}
	content, exists, from, err = readFileText(ctx, env, path)
	return content, exists, from, false, err
}
