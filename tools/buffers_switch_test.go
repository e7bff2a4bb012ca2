package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// holdBackground announces a command in the background over env's
// workspace, as run_command does, until the returned func is called.
func holdBackground(t *testing.T, env *Env) (release func()) {
	t.Helper()
	release, err := env.Locks.Background(context.Background(), env.Root.Dirs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return release
}

// TestWriteGoesWhereItsPlanWasRead: a command in the background that
// starts or ends between an edit's read and its write does not make the
// write land over text the plan did not read. Read from the disk while it
// ran and written once it ended, the edit goes through the editor only if
// the buffer holds the disk's text (else its unsaved changes would be
// replaced); read from the buffer and written once one started, it goes
// to the disk only if the disk holds the buffer's text.
func TestWriteGoesWhereItsPlanWasRead(t *testing.T) {
	const unsaved = "disk\nUSER'S UNSAVED WORK\n"
	tests := []struct {
		name string
		// background is held while the plan is read (then released
		// before the write), or from the read to the write.
		heldForRead   bool
		buffer        string
		wantErr       bool
		wantBuffer    string
		wantDisk      string
		wantVia       string
		wantAskedLast string
	}{
		{"planned on disk, buffer has unsaved changes", true, unsaved, true, unsaved, "disk\n", "", "read a.txt"},
		{"planned on disk, buffer as the disk", true, "disk\n", false, "edited\n", "disk\n", viaEditor, "write a.txt"},
		{"planned on the buffer, it has unsaved changes", false, unsaved, true, unsaved, "disk\n", "", "read a.txt"},
		{"planned on the buffer, it is as the disk", false, "disk\n", false, "disk\n", "edited\n", viaDiskBackground, "read a.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, fb := editorEnv(t, true, true)
			path := filepath.Join(env.Root.Dir(), "a.txt")
			fb.buffers[path] = tt.buffer
			ctx := context.Background()
			background := func() func() { return holdBackground(t, env) }
			var release func()
			if tt.heldForRead {
				release = background()
			}
			old, _, from, err := readFileText(ctx, env, "a.txt")
			if err != nil {
				t.Fatal(err)
			}
			if tt.heldForRead {
				release()
			} else {
				defer background()()
			}
			next := []byte(strings.Replace(string(old), "disk\n", "edited\n", 1))
			via, err := writeFileText(ctx, env, "a.txt", next, true, plannedOn{before: Hash(old), from: from})
			if tt.wantErr != (err != nil) || tt.wantErr && !errors.Is(err, errSourceChanged) {
				t.Errorf("the write: %v, want an error: %v (errSourceChanged)", err, tt.wantErr)
			}
			if via != tt.wantVia {
				t.Errorf("written %q, want %q", via, tt.wantVia)
			}
			if fb.buffers[path] != tt.wantBuffer {
				t.Errorf("the buffer holds %q, want %q", fb.buffers[path], tt.wantBuffer)
			}
			if disk, _ := os.ReadFile(path); string(disk) != tt.wantDisk {
				t.Errorf("the disk holds %q, want %q", disk, tt.wantDisk)
			}
			if last := fb.asked[len(fb.asked)-1]; last != tt.wantAskedLast {
				t.Errorf("the editor was last asked %q, want %q (asked %v)", last, tt.wantAskedLast, fb.asked)
			}
		})
	}
}

// TestEditPlannedOnTheBufferIsNotSavedOnDisk: edit_file's check reads the
// buffer, which has unsaved changes; a command starts in the background
// while the editor answers, and holds from the read to the write. The
// buffer's text with the edit is not written over the disk's.
func TestEditPlannedOnTheBufferIsNotSavedOnDisk(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	path := filepath.Join(env.Root.Dir(), "a.txt")
	fb.buffers[path] = "disk\nUSER'S UNSAVED WORK\n"
	released := make(chan func(), 1)
	fb.onAsk = func(string) {
		fb.mu.Lock()
		fb.onAsk = nil
		fb.mu.Unlock()
		announced := make(chan struct{})
		go func() {
			// It waits for the editor's answer: announced first.
			r, err := env.Locks.Background(context.Background(), env.Root.Dirs(), func() { close(announced) })
			if err != nil {
				t.Error(err)
				close(announced)
			}
			released <- r
		}()
		<-announced
	}
	res := call(t, EditFile{}, env.ForCall("k"), `{"path": "a.txt", "old_string": "USER'S", "new_string": "MY"}`)
	if release := <-released; release != nil {
		release()
	}
	if !res.IsError || !strings.Contains(res.Output, "a command in the background started or ended") {
		t.Errorf("edit_file: %q, want it refused", res.Output)
	}
	if disk, _ := os.ReadFile(path); string(disk) != "disk\n" {
		t.Errorf("the disk holds %q, want it as it was", disk)
	}
}

// TestPutFileWritesOnlyOverThePlannedText: a rewind hashes a file
// (HashFile, its content kept so the rewind can be undone) and later puts
// another text there (PutFile). A command in the background that starts
// or ends in between moves where the write goes (the buffer or the
// disk); the write is done only where the text still hashes to what the
// plan read, or is left as it is where it already holds the new text (a
// rewind a crash cut short, run again). Else the text there, never kept,
// would be lost.
func TestPutFileWritesOnlyOverThePlannedText(t *testing.T) {
	const unsaved = "disk\nUSER'S UNSAVED WORK\n"
	tests := []struct {
		name string
		// editor: the editor offers its buffers. planInBackground: a
		// command runs in the background while the plan hashes the file,
		// and has ended by the write; writeInBackground: one starts after
		// the plan and runs during the write.
		editor                              bool
		planInBackground, writeInBackground bool
		buffer                              string
		// changeDisk, if set, is written on disk between plan and write.
		changeDisk string
		data       string
		wantErr    bool
		wantBuffer string
		wantDisk   string
	}{
		{"planned on disk, the buffer has unsaved changes", true, true, false, unsaved, "", "put\n", true, unsaved, "disk\n"},
		{"planned on disk, the buffer as the disk", true, true, false, "disk\n", "", "put\n", false, "put\n", "disk\n"},
		{"planned on the buffer, the disk differs", true, false, true, unsaved, "", "put\n", true, unsaved, "disk\n"},
		{"planned on the buffer, the disk as it", true, false, true, "disk\n", "", "put\n", false, "disk\n", "put\n"},
		{"planned on the buffer, it is the same", true, false, false, unsaved, "", "put\n", false, "put\n", "disk\n"},
		{"the buffer holds the new text already", true, true, false, "put\n", "", "put\n", false, "put\n", "disk\n"},
		{"the disk holds the new text already", true, false, true, "disk\n", "put\n", "put\n", false, "disk\n", "put\n"},
		{"no editor, the disk changed", false, false, false, "", "changed\n", "put\n", true, "", "changed\n"},
		{"no editor, the disk as planned", false, false, false, "", "", "put\n", false, "", "put\n"},
		{"bytes, the disk changed", true, false, false, "disk\n", "changed\n", "\xff\x00", true, "disk\n", "changed\n"},
		{"bytes, the disk as planned", true, false, false, "disk\n", "", "\xff\x00", false, "disk\n", "\xff\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, fb := editorEnv(t, tt.editor, tt.editor)
			path := filepath.Join(env.Root.Dir(), "a.txt")
			fb.buffers[path] = tt.buffer
			ctx := context.Background()
			background := func() func() { return holdBackground(t, env) }
			var release func()
			if tt.planInBackground {
				release = background()
			}
			from, err := HashFile(ctx, env, "a.txt")
			if err != nil {
				t.Fatal(err)
			}
			if tt.planInBackground {
				release()
			}
			if tt.writeInBackground {
				defer background()()
			}
			if tt.changeDisk != "" {
				if err := os.WriteFile(path, []byte(tt.changeDisk), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			written := len(fb.asked)
			err = PutFile(ctx, env, "a.txt", []byte(tt.data), from)
			if tt.wantErr != (err != nil) || tt.wantErr && !errors.Is(err, errChangedSincePlanned) {
				t.Errorf("PutFile: %v, want an error: %v (errChangedSincePlanned)", err, tt.wantErr)
			}
			if fb.buffers[path] != tt.wantBuffer {
				t.Errorf("the buffer holds %q, want %q", fb.buffers[path], tt.wantBuffer)
			}
			if disk, _ := os.ReadFile(path); string(disk) != tt.wantDisk {
				t.Errorf("the disk holds %q, want %q", disk, tt.wantDisk)
			}
			if tt.wantBuffer == tt.buffer {
				for _, q := range fb.asked[written:] {
					if strings.HasPrefix(q, "write") {
						t.Errorf("the editor was asked to write (asked %v)", fb.asked[written:])
					}
				}
			}
		})
	}
}

// TestStaleEditSaysWhereItWasRead: an edit planned on the editor's buffer
// (its card) whose file changed before Run is refused, and the refusal
// says where the check read it: the buffer, or the disk when a command
// runs in the background (before, both said "the editor's buffer
// changed"). On disk without the editor the edit is planned again: it is
// the same replacement.
func TestStaleEditSaysWhereItWasRead(t *testing.T) {
	const planned = "disk\none\n"
	tests := []struct {
		name       string
		editor     bool
		background bool
		buffer     string // the buffer after the card, through the editor
		disk       string // the disk after the card
		want       error
		wantDisk   string
	}{
		{"the buffer changed", true, false, "disk\none\nUNSAVED\n", planned, errBufferChanged, planned},
		{"the disk differs while a command runs", true, true, planned, "disk\none\nBY THE COMMAND\n", errDiskChanged, "disk\none\nBY THE COMMAND\n"},
		{"on disk, planned again", false, false, "", "disk\none\nmore\n", nil, "disk\ntwo\nmore\n"},
	}
	for _, tool := range []struct {
		tool  Tool
		input string
	}{
		{EditFile{}, `{"path": "a.txt", "old_string": "one", "new_string": "two"}`},
		{WriteFile{}, `{"path": "a.txt", "content": "disk\ntwo\nmore\n"}`},
	} {
		for _, tt := range tests {
			t.Run(tool.tool.Name()+": "+tt.name, func(t *testing.T) {
				env, fb := editorEnv(t, tt.editor, tt.editor)
				path := filepath.Join(env.Root.Dir(), "a.txt")
				testfs.Write(t, path, planned)
				fb.buffers[path] = planned
				callEnv := env.ForCall("k")
				ctx := context.Background()
				if _, err := tool.tool.Preview(ctx, callEnv, json.RawMessage(tool.input)); err != nil {
					t.Fatal(err)
				}
				fb.buffers[path] = tt.buffer
				testfs.Write(t, path, tt.disk)
				if tt.background {
					defer holdBackground(t, env)()
				}
				res := tool.tool.Run(ctx, callEnv, json.RawMessage(tool.input))
				switch {
				case tt.want == nil && res.IsError:
					t.Errorf("%s: %s", tool.tool.Name(), res.Output)
				case tt.want != nil && (!res.IsError || !strings.Contains(res.Output, tt.want.Error())):
					t.Errorf("%s: %q, want it refused: %q", tool.tool.Name(), res.Output, tt.want)
				}
				if disk, _ := os.ReadFile(path); string(disk) != tt.wantDisk {
					t.Errorf("the disk holds %q, want %q", disk, tt.wantDisk)
				}
			})
		}
	}
}
