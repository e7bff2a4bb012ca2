package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/sandbox/fslock"
)

// fakeBuffers is an editor holding buffers over the disk; stall, while
// set, makes every question wait for ctx and answer late, when stall is
// closed.
type fakeBuffers struct {
	read, write bool
	mu          sync.Mutex
	buffers     map[string]string
	asked       []string
	stall       chan struct{}
	// onAsk, if set, is called with each question before it is answered.
	onAsk func(what string)
}

func (b *fakeBuffers) CanRead() bool  { return b.read }
func (b *fakeBuffers) CanWrite() bool { return b.write }

func (b *fakeBuffers) ask(ctx context.Context, what string) (<-chan struct{}, error) {
	b.mu.Lock()
	b.asked = append(b.asked, what)
	stall, onAsk := b.stall, b.onAsk
	b.mu.Unlock()
	if onAsk != nil {
		onAsk(what)
	}
	if stall != nil {
		<-ctx.Done()
		return stall, ctx.Err()
	}
	return nil, nil
}

func (b *fakeBuffers) ReadText(ctx context.Context, path string) (string, <-chan struct{}, error) {
	late, err := b.ask(ctx, "read "+filepath.Base(path))
	if err != nil {
		return "", late, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffers[path], nil, nil
}

func (b *fakeBuffers) WriteText(ctx context.Context, path, content string) (<-chan struct{}, error) {
	late, err := b.ask(ctx, "write "+filepath.Base(path))
	if err != nil {
		return late, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buffers[path] = content
	return nil, nil
}

// editorEnv is testEnv with a.txt on disk ("disk\n") and in fake
// buffers offering the halves given ("buffer\n"), and a lock file.
func editorEnv(t *testing.T, read, write bool) (*Env, *fakeBuffers) {
	t.Helper()
	env := testEnv(t)
	path := filepath.Join(env.Root.Dir(), "a.txt")
	testfs.Write(t, path, "disk\n")
	fb := &fakeBuffers{read: read, write: write, buffers: map[string]string{path: "buffer\n"}}
	locks, err := fslock.Open(filepath.Join(t.TempDir(), "fs.lock"))
	if err != nil {
		t.Fatalf("this system cannot take the locks: %v", err)
	}
	env.Buffers, env.Locks = fb, locks
	return env, fb
}

// TestEditorOnlyWithBothHalves: the editor is asked only when it offers
// both halves of fs; with one, reads and edits are on disk.
func TestEditorOnlyWithBothHalves(t *testing.T) {
	tests := []struct {
		read, write bool
		wantRead    string
		wantDisk    string
		wantAsked   string
	}{
		{true, true, "[from the editor's buffer]", "disk\n", "read a.txt,read a.txt,write a.txt"},
		{true, false, "disk", "edited\n", ""},
		{false, true, "disk", "edited\n", ""},
		{false, false, "disk", "edited\n", ""},
	}
	for _, tt := range tests {
		env, fb := editorEnv(t, tt.read, tt.write)
		if res := call(t, ReadFile{}, env, `{"path": "a.txt"}`); !strings.Contains(res.Output, tt.wantRead) {
			t.Errorf("read %v/write %v: read_file said %q, want %q", tt.read, tt.write, res.Output, tt.wantRead)
		}
		in := `{"path": "a.txt", "content": "edited\n"}`
		if res := call(t, WriteFile{}, env.ForCall("k"), in); res.IsError {
			t.Fatalf("write_file: %s", res.Output)
		}
		if disk, _ := os.ReadFile(filepath.Join(env.Root.Dir(), "a.txt")); string(disk) != tt.wantDisk {
			t.Errorf("read %v/write %v: the disk holds %q, want %q", tt.read, tt.write, disk, tt.wantDisk)
		}
		if asked := strings.Join(fb.asked, ","); asked != tt.wantAsked {
			t.Errorf("read %v/write %v: the editor was asked %q, want %q", tt.read, tt.write, asked, tt.wantAsked)
		}
	}
}

// TestEditorNotAskedWhileACommandRuns: while a command may write the
// workspace, a read comes from the disk and says why, and an edit waits
// for the command (here until its context ends).
func TestEditorNotAskedWhileACommandRuns(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	release, err := env.Locks.Command(context.Background(), env.Root.Dirs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	res := call(t, ReadFile{}, env, `{"path": "a.txt"}`)
	if !strings.Contains(res.Output, "[read from disk: a.txt: a command that can write there is running") || !strings.Contains(res.Output, "disk") {
		t.Errorf("read_file while a command runs: %q", res.Output)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = (WriteFile{}).Plan(ctx, env.ForCall("k"), []byte(`{"path": "a.txt", "content": "x"}`))
	if err == nil || !strings.Contains(err.Error(), "waiting for a command that can write there to end: context canceled") {
		t.Errorf("an edit's plan while a command runs: %v, want it to wait", err)
	}
	if len(fb.asked) > 0 {
		t.Errorf("the editor was asked %v while a command ran", fb.asked)
	}
}

// TestAQuestionGivenUpStillKeepsCommandsOut: bridle stops waiting for an
// editor that does not answer (the turn ended), but the editor may still
// open the file: commands wait until it answers.
func TestAQuestionGivenUpStillKeepsCommandsOut(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	fb.stall = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The question is asked with a context already ended: the fake editor
	// answers nothing, and bridle gives up at once.
	call, err := holdEditor(context.Background(), env, "a.txt", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufferText(ctx, env, call, env.Root.Abs("a.txt"), "a.txt"); err == nil {
		t.Fatal("a question to a silent editor with its context ended succeeded")
	}
	call.done()
	waiting := make(chan struct{})
	wctx, stop := context.WithCancel(context.Background())
	go func() {
		<-waiting
		stop()
	}()
	if _, err := env.Locks.Command(wctx, env.Root.Dirs(), func() { close(waiting) }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a command while the editor still holds a question: %v, want it to wait", err)
	}
	close(fb.stall) // the editor answers, late: the command goes ahead
	release, err := env.Locks.Command(context.Background(), env.Root.Dirs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	release()
}

// TestEditorNotAskedThroughAMovedWorkspace: with the workspace directory
// renamed and a link to a directory outside put under its name (a file
// of the same name left in the renamed one), read_file, edit_file,
// write_file and the rewind's and recovery's FileContent, HashFile and
// PutFile refuse, saying so, and the editor (which would follow the link)
// is never asked.
func TestEditorNotAskedThroughAMovedWorkspace(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	dir := env.Root.Dir()
	outside := t.TempDir()
	testfs.Write(t, filepath.Join(outside, "a.txt"), "outside\n")
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	uses := map[string]func() error{
		"read_file": func() error { return resultErr(call(t, ReadFile{}, env.ForCall("r"), `{"path": "a.txt"}`)) },
		"edit_file": func() error {
			return resultErr(call(t, EditFile{}, env.ForCall("e"), `{"path": "a.txt", "old_string": "outside", "new_string": "x"}`))
		},
		"write_file": func() error {
			return resultErr(call(t, WriteFile{}, env.ForCall("w"), `{"path": "a.txt", "content": "x\n"}`))
		},
		"FileContent": func() error {
			_, _, err := FileContent(ctx, env, "a.txt")
			return err
		},
		"HashFile": func() error {
			_, err := HashFile(ctx, env, "a.txt")
			return err
		},
		"PutFile": func() error { return PutFile(ctx, env, "a.txt", []byte("x\n"), Hash([]byte("outside\n"))) },
	}
	for name, use := range uses {
		if err := use(); err == nil || !strings.Contains(err.Error(), "was moved or replaced") {
			t.Errorf("%s through a moved workspace: %v", name, err)
		}
	}
	if len(fb.asked) > 0 {
		t.Errorf("the editor was asked %v through a moved workspace", fb.asked)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "a.txt")); string(b) != "outside\n" {
		t.Errorf("the file outside holds %q", b)
	}
}

// resultErr is a tool's error result as an error.
func resultErr(r Result) error {
	if !r.IsError {
		return nil
	}
	return errors.New(r.Output)
}

// TestWithoutWaitingSharesThePlan: a card previewed without waiting while
// a command runs shows its title and no diff, at once, and the editor is
// not asked; the copy shares the call's memo, so the plan the call makes
// is the card's too.
func TestWithoutWaitingSharesThePlan(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	callEnv := env.ForCall("k")
	card := callEnv.WithoutWaiting()
	in := []byte(`{"path": "a.txt", "content": "edited\n"}`)
	release, err := env.Locks.Command(context.Background(), env.Root.Dirs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := (WriteFile{}).Preview(context.Background(), card, in)
	release()
	if err != nil || p.Diff != nil || p.Title != "Write a.txt" {
		t.Fatalf("a card previewed while a command runs: %+v, %v; want its title and no diff", p, err)
	}
	if len(fb.asked) > 0 {
		t.Fatalf("the editor was asked %v while a command ran", fb.asked)
	}
	if card.call != callEnv.call {
		t.Fatal("the card's copy does not share the call's memo")
	}
	if p, err := (WriteFile{}).Preview(context.Background(), card, in); err != nil || p.Diff == nil {
		t.Fatalf("a card previewed once the command ended: %+v, %v; want its diff", p, err)
	}
}

// TestEditWaitSaysSo: an edit that has to wait for a command to end
// before it asks the editor says so through Env.Waiting, once, and waits
// until its context ends (or commandWait); a copy made WithoutWaiting
// fails at once, saying nothing.
func TestEditWaitSaysSo(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	release, err := env.Locks.Command(context.Background(), env.Root.Dirs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	in := []byte(`{"path": "a.txt", "content": "x\n"}`)
	ctx, cancel := context.WithCancel(context.Background())
	var notes []string
	callEnv := env.ForCall("k")
	callEnv.Waiting = func(note string) {
		notes = append(notes, note)
		cancel()
	}
	if _, err := (WriteFile{}).Plan(ctx, callEnv, in); !errors.Is(err, context.Canceled) {
		t.Errorf("an edit waiting for a command: %v, want it to wait until its context ends", err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "waiting for a command of another session (or another bridle window) that can write a.txt to end, up to 30s") {
		t.Errorf("notes: %q", notes)
	}
	notes = nil
	if _, err := (WriteFile{}).Plan(context.Background(), callEnv.WithoutWaiting(), in); !errors.Is(err, fslock.ErrBusy) || len(notes) > 0 {
		t.Errorf("without waiting: %v (notes %q), want fslock.ErrBusy at once", err, notes)
	}
	if len(fb.asked) > 0 {
		t.Errorf("the editor was asked %v while a command ran", fb.asked)
	}
}

// TestNewFilesThroughTheEditor: a new text file is sent to the editor
// (its missing directory made on disk first); binary content, content
// over the editor's bound, a hidden path and a name taken since the plan
// are not.
func TestNewFilesThroughTheEditor(t *testing.T) {
	big := strings.Repeat("x", maxBufferRead+1)
	tests := []struct {
		name, path, content string
		// taken makes the file on disk between the plan and the write.
		taken     bool
		wantAsked string
		wantDisk  bool   // the file is on disk after the write
		wantErr   string // in the result when it fails
	}{
		// Asked first whether it holds unsaved text under the name.
		{name: "text", path: "new.txt", content: "hello\n", wantAsked: "read new.txt,write new.txt"},
		{name: "missing directory", path: "d/e/new.txt", content: "hello\n", wantAsked: "read new.txt,write new.txt"},
		{name: "NUL byte", path: "bin.dat", content: "a\x00b", wantDisk: true},
		{name: "over the bound", path: "big.txt", content: big, wantDisk: true},
		{name: "taken since the plan", path: "new.txt", content: "hello\n", taken: true, wantAsked: "read new.txt", wantErr: "nothing was changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, fb := editorEnv(t, true, true)
			env = env.ForCall("k")
			abs := filepath.Join(env.Root.Dir(), tt.path)
			in, _ := json.Marshal(map[string]string{"path": tt.path, "content": tt.content})
			if _, err := (WriteFile{}).Plan(context.Background(), env, in); err != nil {
				t.Fatalf("plan: %v", err)
			}
			if tt.taken {
				testfs.Write(t, abs, "theirs\n")
			}
			res := (WriteFile{}).Run(context.Background(), env, in)
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Output, tt.wantErr) {
					t.Fatalf("result %q, want an error saying %q", res.Output, tt.wantErr)
				}
			} else if res.IsError {
				t.Fatalf("write_file: %s", res.Output)
			}
			if asked := strings.Join(fb.asked, ","); asked != tt.wantAsked {
				t.Errorf("the editor was asked %q, want %q", asked, tt.wantAsked)
			}
			disk, err := os.ReadFile(abs)
			switch {
			case tt.taken:
				if string(disk) != "theirs\n" {
					t.Errorf("the file made meanwhile holds %q", disk)
				}
			case tt.wantDisk:
				if string(disk) != tt.content {
					t.Errorf("on disk: %d bytes, %v; want the content", len(disk), err)
				}
			default:
				if err == nil {
					t.Errorf("the file is on disk (%q): it should be the editor's", disk)
				}
				if got := fb.buffers[abs]; got != tt.content {
					t.Errorf("the editor holds %q, want %q", got, tt.content)
				}
				if fi, err := os.Stat(filepath.Dir(abs)); err != nil || !fi.IsDir() {
					t.Errorf("the file's directory was not made: %v", err)
				}
			}
		})
	}
}

// TestNewFileInAHiddenDirectoryIsNotSent: a new file under a hidden path
// is refused before the editor is asked.
func TestNewFileInAHiddenDirectoryIsNotSent(t *testing.T) {
	env, fb := editorEnv(t, true, true)
	env.Root.Hide(filepath.Join(env.Root.Dir(), "secret"))
	res := call(t, WriteFile{}, env.ForCall("k"), `{"path": "secret/new.txt", "content": "x\n"}`)
	if !res.IsError {
		t.Fatalf("write_file in a hidden directory: %q", res.Output)
	}
	if len(fb.asked) > 0 {
		t.Errorf("the editor was asked %v", fb.asked)
	}
}
