package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
			background := func() func() {
				release, err := env.Locks.Background(ctx, env.Root.Dirs(), nil)
				if err != nil {
					t.Fatal(err)
				}
				return release
			}
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
