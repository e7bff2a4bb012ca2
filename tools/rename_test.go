package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/lsp"
)

func te(sl, sc, el, ec int, text string) lsp.TextEdit {
	return lsp.TextEdit{StartLine: sl, StartCol16: sc, EndLine: el, EndCol16: ec, NewText: text}
}

// TestApplyEdits: a server's edits, in UTF-16 columns, land on the right
// bytes; edits past the text or overlapping are refused.
func TestApplyEdits(t *testing.T) {
	for _, c := range []struct {
		name, text string
		edits      []lsp.TextEdit
		want, err  string
	}{
		{"one", "func add() {}\n", []lsp.TextEdit{te(0, 5, 0, 8, "sum")}, "func sum() {}\n", ""},
		{"two lines, out of order", "a := add\nb := add\n",
			[]lsp.TextEdit{te(1, 5, 1, 8, "sum"), te(0, 5, 0, 8, "sum")}, "a := sum\nb := sum\n", ""},
		{"after a wide character", "s := \"é😀\" + add\n", []lsp.TextEdit{te(0, 13, 0, 16, "sum")}, "s := \"é😀\" + sum\n", ""},
		{"insertion", "x\n", []lsp.TextEdit{te(0, 1, 0, 1, "y")}, "xy\n", ""},
		{"past the end", "x\n", []lsp.TextEdit{te(5, 0, 5, 1, "y")}, "", "line 6 is past the end"},
		{"past a line's end", "x\ny\n", []lsp.TextEdit{te(0, 3, 0, 4, "y")}, "", "column 4 of line 1 is past its end"},
		{"overlapping", "abcdef\n", []lsp.TextEdit{te(0, 0, 0, 3, "x"), te(0, 2, 0, 4, "y")}, "", "two of its edits overlap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := applyEdits([]byte(c.text), c.edits)
			switch {
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Errorf("error %v, want %q", err, c.err)
			case c.err == "" && err != nil:
				t.Errorf("error %v", err)
			case c.err == "" && string(got) != c.want:
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// renamingServer is a language server that renames "add" wherever the
// workspace's files on disk hold it when asked, and counts the questions.
type renamingServer struct {
	answering
	dir   string
	asked *int
}

func (s renamingServer) Ask(_ context.Context, q CodeQuery) (CodeAnswer, error) {
	*s.asked++
	ans := CodeAnswer{Server: "fakels", Edits: map[string][]lsp.TextEdit{}}
	for _, name := range []string{"a.go", "b.go"} {
		path := filepath.Join(s.dir, name)
		data, _ := os.ReadFile(path)
		for i, line := range strings.Split(string(data), "\n") {
			if at := strings.Index(line, "add"); at >= 0 {
				ans.Edits[path] = append(ans.Edits[path], te(i, at, i, at+3, q.NewName))
			}
		}
	}
	return ans, nil
}

// TestRenameChangedSincePlannedIsRefused: a rename's files change between
// the plan the user approved (Preview) and its write (Run). It is
// refused, on disk as through the editor, and the server is not asked
// again: asked again it may change other files than the approved diff
// shows (here b.go, which a command made use add meanwhile). Before, on
// disk the rename was planned again and b.go written unapproved.
func TestRenameChangedSincePlannedIsRefused(t *testing.T) {
	const aGo, bGo = "func add() {}\n", "x := 1\n"
	tests := []struct {
		name   string
		editor bool
		// between is done after the approved plan, before Run.
		between func(t *testing.T, env *Env, fb *fakeBuffers, dir string) (release func())
		wantErr string
		// wantA and wantB are the files on disk; wantBufA a.go's buffer
		// (through the editor), and b.go's is as it was.
		wantA, wantB, wantBufA string
		wantAsks               int
	}{
		{"nothing changed, on disk", false, nil, "", "func sum() {}\n", bGo, "", 1},
		{"a file changed on disk", false, func(t *testing.T, _ *Env, _ *fakeBuffers, dir string) func() {
			testfs.Write(t, filepath.Join(dir, "a.go"), "func add() {}\n// changed\n")
			testfs.Write(t, filepath.Join(dir, "b.go"), "x := add\n")
			return nil
		}, "rename: a.go changed since the rename was planned (on disk); nothing was changed: ask for the rename again", "func add() {}\n// changed\n", "x := add\n", "", 1},
		{"nothing changed, through the editor", true, nil, "", aGo, bGo, "func sum() {}\n", 1},
		{"the editor's buffer changed", true, func(t *testing.T, _ *Env, fb *fakeBuffers, dir string) func() {
			fb.buffers[filepath.Join(dir, "a.go")] = "// unsaved\nfunc add() {}\n"
			return nil
		}, "rename: a.go changed since the rename was planned (in the editor's buffer); nothing was changed", aGo, bGo, "// unsaved\nfunc add() {}\n", 1},
		{"the disk differs while a command runs in the background", true, func(t *testing.T, env *Env, fb *fakeBuffers, dir string) func() {
			testfs.Write(t, filepath.Join(dir, "a.go"), "func add() {}\n// changed\n")
			return holdBackground(t, env)
		}, "rename: a.go changed since the rename was planned (on disk, read there rather than in the editor's buffer while a command runs in the background); nothing was changed", "func add() {}\n// changed\n", bGo, aGo, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, fb := editorEnv(t, tt.editor, tt.editor)
			dir := env.Root.Dir()
			testfs.Write(t, filepath.Join(dir, "a.go"), aGo)
			testfs.Write(t, filepath.Join(dir, "b.go"), bGo)
			fb.buffers[filepath.Join(dir, "a.go")] = aGo
			fb.buffers[filepath.Join(dir, "b.go")] = bGo
			asks := 0
			env.Code = renamingServer{dir: dir, asked: &asks}
			callEnv := env.ForCall("k")
			in := json.RawMessage(`{"path": "a.go", "line": 1, "symbol": "add", "new_name": "sum"}`)
			p, err := Rename{}.Preview(context.Background(), callEnv, in)
			if err != nil || len(p.Diffs) != 1 {
				t.Fatalf("the preview: %+v, %v; want a diff of a.go alone", p, err)
			}
			if tt.between != nil {
				if release := tt.between(t, env, fb, dir); release != nil {
					defer release()
				}
			}
			res := Rename{}.Run(context.Background(), callEnv, in)
			switch {
			case tt.wantErr == "" && res.IsError:
				t.Errorf("the rename: %s", res.Output)
			case tt.wantErr != "" && (!res.IsError || !strings.Contains(res.Output, tt.wantErr)):
				t.Errorf("the rename: %q, want it refused: %q", res.Output, tt.wantErr)
			}
			read := func(name string) string {
				data, _ := os.ReadFile(filepath.Join(dir, name))
				return string(data)
			}
			if read("a.go") != tt.wantA {
				t.Errorf("a.go holds %q on disk, want %q", read("a.go"), tt.wantA)
			}
			if read("b.go") != tt.wantB {
				t.Errorf("b.go holds %q on disk, want %q: a file the approved diff did not show was changed", read("b.go"), tt.wantB)
			}
			if got := fb.buffers[filepath.Join(dir, "a.go")]; tt.editor && got != tt.wantBufA {
				t.Errorf("a.go's buffer holds %q, want %q", got, tt.wantBufA)
			}
			if got := fb.buffers[filepath.Join(dir, "b.go")]; got != bGo {
				t.Errorf("b.go's buffer holds %q, want it as it was", got)
			}
			if asks != tt.wantAsks {
				t.Errorf("the server was asked %d times, want %d", asks, tt.wantAsks)
			}
		})
	}
}
