package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/sandbox/box"
)

// takeAsked returns the questions the fake editor was asked and forgets them.
func (b *fakeBuffers) takeAsked() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.asked
	b.asked = nil
	return a
}

// TestAnEditIsPlannedOnWhatWasRead: with the editor's buffers, an edit of
// a file just read is previewed, planned and shown on the text the read
// got, without asking again, and asks once, right before it writes; a
// write remembers the text written.
func TestAnEditIsPlannedOnWhatWasRead(t *testing.T) {
	for _, tool := range []Tool{EditFile{}, WriteFile{}} {
		t.Run(tool.Name(), func(t *testing.T) {
			env, fb := editorEnv(t, true, true)
			env.Texts = NewBufferTexts()
			ctx := context.Background()
			if res := call(t, ReadFile{}, env, `{"path": "a.txt"}`); res.IsError || !strings.Contains(res.Output, "buffer") {
				t.Fatalf("read: %s", res.Output)
			}
			fb.takeAsked()
			in := json.RawMessage(`{"path": "a.txt", "old_string": "buffer", "new_string": "edited"}`)
			if tool.Name() == "write_file" {
				in = json.RawMessage(`{"path": "a.txt", "content": "edited\n"}`)
			}
			c := env.ForCall("k")
			p, err := tool.Preview(ctx, c, in)
			if err != nil || p.Diff == nil || *p.Diff.OldText != "buffer\n" {
				t.Fatalf("preview: %+v, %v", p, err)
			}
			if _, err := tool.(Planner).Plan(ctx, c, in); err != nil {
				t.Fatal(err)
			}
			if _, err := tool.Preview(ctx, c.WithoutWaiting(), in); err != nil {
				t.Fatal(err)
			}
			if a := fb.takeAsked(); len(a) > 0 {
				t.Errorf("the preview, plan and card asked the editor %v; want nothing", a)
			}
			if res := tool.Run(ctx, c, in); res.IsError {
				t.Fatal(res.Output)
			}
			if a := fb.takeAsked(); !slices.Equal(a, []string{"read a.txt", "write a.txt"}) {
				t.Errorf("the run asked %v; want the check and the write", a)
			}
			// The next edit starts from what was written.
			in2 := json.RawMessage(`{"path": "a.txt", "content": "again\n"}`)
			if p, err := (WriteFile{}).Preview(ctx, env.ForCall("k2"), in2); err != nil || *p.Diff.OldText != "edited\n" {
				t.Fatalf("the next preview: %+v, %v; want it planned on the text written", p, err)
			}
			if a := fb.takeAsked(); len(a) > 0 {
				t.Errorf("the next preview asked %v", a)
			}
		})
	}
}

// TestAStaleEditIsRefused: a buffer that changed after the text an edit
// was planned on (the read, or the preview's question) is not written:
// the run says so and the buffer keeps its text. On disk, where a check
// is cheap, the edit is planned again as before.
func TestAStaleEditIsRefused(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	env.Texts = NewBufferTexts()
	ctx := context.Background()
	path := filepath.Join(env.Root.Dir(), "a.txt")
	call(t, ReadFile{}, env, `{"path": "a.txt"}`)
	c := env.ForCall("k")
	in := json.RawMessage(`{"path": "a.txt", "old_string": "buffer", "new_string": "edited"}`)
	if _, err := (EditFile{}).Preview(ctx, c, in); err != nil {
		t.Fatal(err)
	}
	fb.mu.Lock()
	fb.buffers[path] = "buffer\ntyped\n"
	fb.mu.Unlock()
	res := (EditFile{}).Run(ctx, c, in)
	if !res.IsError || !strings.Contains(res.Output, "changed since this edit was planned") {
		t.Fatalf("run over a changed buffer: %s", res.Output)
	}
	if got := fb.buffers[path]; got != "buffer\ntyped\n" {
		t.Fatalf("the buffer holds %q", got)
	}
	// The model's next try is planned on the buffer as it is.
	if res := (EditFile{}).Run(ctx, env.ForCall("k2"), in); res.IsError || fb.buffers[path] != "edited\ntyped\n" {
		t.Fatalf("the next try: %s, buffer %q", res.Output, fb.buffers[path])
	}
}

// TestAHintTheEditDoesNotApplyToIsAskedAgain: an edit whose old_string is
// not in the text bridle last had (the buffer changed since, and the
// model learned of it another way) is planned on the editor's text before
// the model is told it does not apply.
func TestAHintTheEditDoesNotApplyToIsAskedAgain(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	env.Texts = NewBufferTexts()
	path := filepath.Join(env.Root.Dir(), "a.txt")
	call(t, ReadFile{}, env, `{"path": "a.txt"}`)
	fb.mu.Lock()
	fb.buffers[path] = "formatted\n"
	fb.mu.Unlock()
	c := env.ForCall("k")
	in := json.RawMessage(`{"path": "a.txt", "old_string": "formatted", "new_string": "edited"}`)
	if _, err := (EditFile{}).Preview(context.Background(), c, in); err != nil {
		t.Fatal(err)
	}
	if res := (EditFile{}).Run(context.Background(), c, in); res.IsError || fb.buffers[path] != "edited\n" {
		t.Fatalf("run: %s, buffer %q", res.Output, fb.buffers[path])
	}
}

// TestACommandForgetsTheBuffersTexts: once a command ran, the files may
// have changed and the editor reloaded them: an edit asks the editor.
func TestACommandForgetsTheBuffersTexts(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	env.Texts = NewBufferTexts()
	call(t, ReadFile{}, env, `{"path": "a.txt"}`)
	cmd := &RunCommand{Box: box.New(box.Options{})}
	if res := call(t, cmd, env, `{"command": "true"}`); res.IsError {
		t.Fatal(res.Output)
	}
	fb.takeAsked()
	if _, err := (EditFile{}).Preview(context.Background(), env.ForCall("k"), json.RawMessage(`{"path": "a.txt", "old_string": "buffer", "new_string": "x"}`)); err != nil {
		t.Fatal(err)
	}
	if a := fb.takeAsked(); !slices.Equal(a, []string{"read a.txt"}) {
		t.Errorf("the preview after a command asked %v; want the editor's text", a)
	}
}

// TestBufferTextsBounds: the texts kept are bounded in number and bytes,
// the oldest dropped first.
func TestBufferTextsBounds(t *testing.T) {
	b := NewBufferTexts()
	for i := range maxBufferTexts + 5 {
		b.put(fmt.Sprint(i), "x")
	}
	if _, ok := b.get("0"); ok {
		t.Error("the oldest text was kept past the count")
	}
	if _, ok := b.get(fmt.Sprint(maxBufferTexts + 4)); !ok {
		t.Error("the newest text was dropped")
	}
	big := strings.Repeat("y", maxBufferTextBytes/2+1)
	b.put("a", big)
	b.put("b", big)
	if _, ok := b.get("a"); ok {
		t.Error("the texts grew past their bytes")
	}
	if b.size > maxBufferTextBytes {
		t.Errorf("%d bytes kept", b.size)
	}
	b.put("c", strings.Repeat("z", maxBufferTextBytes+1))
	if _, ok := b.get("c"); ok {
		t.Error("a text over the bound was kept")
	}
	var nilTexts *BufferTexts
	nilTexts.put("a", "x")
	if _, ok := nilTexts.get("a"); ok {
		t.Error("nil holds a text")
	}
}

// An edit planned on the text a read got, whose check before the write
// must wait for a command of another session, says so and why it gave
// up, not that the buffer changed.
func TestACheckThatWaitsSaysWhy(t *testing.T) {
	env, _ := editorEnv(t, true, true)
	env.Texts = NewBufferTexts()
	call(t, ReadFile{}, env, `{"path": "a.txt"}`)
	in := json.RawMessage(`{"path": "a.txt", "content": "x\n"}`)
	c := env.ForCall("k")
	if _, err := (WriteFile{}).Preview(context.Background(), c, in); err != nil {
		t.Fatal(err)
	}
	release, err := env.Locks.Command(context.Background(), env.Root.Dirs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	waited := false
	c.Waiting = func(string) { waited = true; cancel() }
	res := (WriteFile{}).Run(ctx, c, in)
	if !res.IsError || !waited || !strings.Contains(res.Output, "context canceled") || strings.Contains(res.Output, "changed since") {
		t.Fatalf("a check that waited for a command (waited %v): %q", waited, res.Output)
	}
}
