package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fsnotify/fsnotify"

	"github.com/bridle-dev/bridle/internal/acpclient"
	"github.com/bridle-dev/bridle/internal/acptest"
)

// diskEditor is an editor that keeps no buffers of its own: it answers
// fs/read_text_file by reading the path it is given and fs/write_text_file
// by writing it, following links as real editors do. Its timing is the
// worst a real editor's could be: while a swapper runs, it answers the
// questions of one method (racy) only once the swapper has just made the
// path a link (an editor takes some time to answer; this one takes
// exactly the wrong time), so every such question bridle lets it answer
// during a swap reaches the file outside. It counts what did.
type diskEditor struct {
	outside, marker string
	swaps           *swaps

	mu   sync.Mutex
	calm chan struct{} // closed while no swapper runs
	racy string        // the method answered at the worst moment
	// hold, while set, holds writes until it is closed: each is sent to
	// held, and heldDone is closed once it is written.
	hold, held, heldDone        chan struct{}
	reads, writes               int
	readsOutside, writesOutside int
}

// fsParams is what an fs/ request names: its path and, for a write, the
// content.
func fsParams(m acptest.Msg) (path, content string) {
	var p struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	json.Unmarshal(m.Params, &p)
	return p.Path, p.Content
}

// fromDisk answers fs/read_text_file with the file at path, following
// links, as an editor without a buffer for it does.
func fromDisk(path string) (any, *acptest.RPCError) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &acptest.RPCError{Code: -32002, Message: err.Error()}
	}
	return map[string]string{"content": string(b)}, nil
}

func (e *diskEditor) handle(m acptest.Msg) (any, *acptest.RPCError) {
	if !strings.HasPrefix(m.Method, "fs/") {
		return acpclient.FirstOption(m)
	}
	var p struct{ Path, Content string }
	p.Path, p.Content = fsParams(m)
	e.mu.Lock()
	hold, held, heldDone := e.hold, e.held, e.heldDone
	e.mu.Unlock()
	if hold != nil && m.Method == "fs/write_text_file" {
		held <- struct{}{}
		<-hold
		defer close(heldDone)
	}
	e.mu.Lock()
	calm, racy := e.calm, e.racy == m.Method
	e.mu.Unlock()
	if racy {
		select {
		case <-e.swaps.nextLink():
		case <-calm:
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if m.Method == "fs/read_text_file" {
		e.reads++
		if b, _ := os.ReadFile(p.Path); strings.Contains(string(b), e.marker) {
			e.readsOutside++
		}
		return fromDisk(p.Path)
	}
	e.writes++
	if err := os.WriteFile(p.Path, []byte(p.Content), 0o644); err != nil {
		return nil, &acptest.RPCError{Code: -32603, Message: err.Error()}
	}
	if b, _ := os.ReadFile(e.outside); string(b) != e.marker+"\n" {
		// Counted, and put back so that later writes are seen too.
		e.writesOutside++
		os.WriteFile(e.outside, []byte(e.marker+"\n"), 0o644)
	}
	return nil, nil
}

// swapping marks a swapper running until the returned func is called.
func (e *diskEditor) swapping() (calm func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := make(chan struct{})
	e.calm = c
	var once sync.Once
	return func() { once.Do(func() { close(c) }) }
}

// swaps follows a file being swapped (inotify): nextLink is closed the
// next time the file becomes a symbolic link.
type swaps struct {
	mu   sync.Mutex
	next chan struct{}
}

func watchSwaps(t *testing.T, file string) *swaps {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(filepath.Dir(file)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	s := &swaps{next: make(chan struct{})}
	go func() {
		for ev := range w.Events {
			if ev.Name != file {
				continue
			}
			if fi, err := os.Lstat(file); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				s.mu.Lock()
				close(s.next)
				s.next = make(chan struct{})
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *swaps) nextLink() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// swapper is a command that swaps a.txt between a regular file and a link
// to the file outside, until the file stop exists or it has swapped max
// times; it says "swapping" and its label first.
func swapper(label, outside string, max int) string {
	return fmt.Sprintf(`echo swapping %s; i=0; while [ ! -e stop ] && [ $i -lt %d ]; do ln -sf %s l.tmp && mv -f l.tmp a.txt; printf 'inside\n' > r.tmp && mv -f r.tmp a.txt; i=$((i+1)); done; echo swapped $i`, label, max, outside)
}

// TestEditorFSRacesNoCommand: session B's command swaps a.txt between a
// regular file and a link to a file outside the workspace while session A,
// whose editor offers fs, reads a.txt many times, then writes it many
// times, through an editor that follows links at the worst moment; last,
// A's turn is cancelled while the editor still holds a write, and B starts
// swapping. The file outside never reaches the model or the log, and is
// never written: no command runs from before bridle checks a path until
// the editor has answered about it. Reads made while a command runs come
// from the disk, through the checked file; writes wait for the command to
// end; a command waits for the editor's answer, even to a question bridle
// gave up. The two sessions are in one bridle, or in two bridle processes
// (two editor windows) sharing the user's lock file.
func TestEditorFSRacesNoCommand(t *testing.T) {
	const reads, writes = 200, 100
	for _, twoProcesses := range []bool{false, true} {
		name := "two sessions of one bridle"
		if twoProcesses {
			name = "two bridle processes"
		}
		t.Run(name, func(t *testing.T) {
			ws := acptest.Workspace(t, map[string]string{"a.txt": "inside\n"})
			outside := filepath.Join(t.TempDir(), "secret.txt")
			marker := "OUTSIDE-MARKER-q8Zt4"
			if err := os.WriteFile(outside, []byte(marker+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			calls := func(n int, call string) string { return strings.TrimSuffix(strings.Repeat(call+",", n), ",") }
			swap := func(label string, max int) string {
				b, _ := json.Marshal(map[string]any{"command": swapper(label, outside, max), "timeout_seconds": 300})
				return `{"match": "` + label + `", "calls": [{"tool_calls": [{"name": "run_command", "input": ` + string(b) + `}]}, {"text": "swapped"}]}`
			}
			scenario := `{"turns": [` + swap("SWAP-UNTIL-STOP", 1000000) + `,` + swap("SWAP-300", 300) + `,` + swap("SWAP-LATE", 1000000) + `,
				{"match": "READ-MANY", "calls": [{"tool_calls": [` + calls(reads, `{"name": "read_file", "input": {"path": "a.txt"}}`) + `]}, {"text": "read"}]},
				{"match": "WRITE-MANY", "calls": [{"tool_calls": [` + calls(writes, `{"name": "write_file", "input": {"path": "a.txt", "content": "written by the model\n"}}`) + `]}, {"text": "written"}]},
				{"match": "WRITE-ONE", "calls": [{"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "written late\n"}}]}, {"text": "written"}]}
			]}`
			model := acptest.Scenario(t, scenario)
			// Both processes share the user's cache directory, where the
			// lock file is.
			env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
			calm := make(chan struct{})
			close(calm)
			ed := &diskEditor{outside: outside, marker: marker, swaps: watchSwaps(t, filepath.Join(ws, "a.txt")), calm: calm, racy: "fs/read_text_file"}
			a := acptest.Start(t, acptest.Options{Model: model, Env: env})
			a.OnRequest = ed.handle
			a.InitializeWith(true, true)
			b := a
			if twoProcesses {
				b = acptest.Start(t, acptest.Options{Model: model, Env: env})
				b.Initialize()
			}
			sidA, sidB := a.NewSession(ws), b.NewSession(ws)
			a.MustCall("session/set_mode", map[string]any{"sessionId": sidA, "modeId": "auto-edit"}, nil)
			b.MustCall("session/set_mode", map[string]any{"sessionId": sidB, "modeId": "full-auto"}, nil)

			// noteOfB waits for a tool_call_update of B holding one of
			// texts, and returns the one it holds.
			noteOfB := func(texts ...string) string {
				var found string
				b.WaitNote(func(m acptest.Msg) bool {
					if m.Method != "session/update" || !strings.Contains(string(m.Params), sidB) || !strings.Contains(string(m.Params), `"tool_call_update"`) {
						return false
					}
					for _, s := range texts {
						if strings.Contains(string(m.Params), s) {
							found = s
							return true
						}
					}
					return false
				})
				return found
			}
			// startSwap sends B the prompt that runs the swapper label;
			// answered gets B's answer, and marks the swapper ended.
			startSwap := func(label string) (answered <-chan acptest.Msg, calm func()) {
				calm = ed.swapping()
				_, answer := b.Request("session/prompt", acptest.PromptParams(sidB, label))
				done := make(chan acptest.Msg, 1)
				go func() {
					m := <-answer
					calm()
					done <- m
				}()
				return done, calm
			}
			stop := func(answered <-chan acptest.Msg) {
				if err := os.WriteFile(filepath.Join(ws, "stop"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				if m := <-answered; m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
					t.Fatalf("B's swapper answered %s %+v", m.Result, m.Error)
				}
				os.Remove(filepath.Join(ws, "stop"))
			}

			// Reads while B swaps, until A is done.
			answered, _ := startSwap("SWAP-UNTIL-STOP")
			noteOfB("swapping SWAP-UNTIL-STOP")
			if reason := a.Prompt(sidA, "READ-MANY"); reason != "end_turn" {
				t.Fatalf("A's reads: stopReason %q", reason)
			}
			stop(answered)
			ed.mu.Lock()
			readsAsked := ed.reads
			ed.racy = "fs/write_text_file"
			ed.mu.Unlock()

			// Writes while B swaps 300 times: they wait for it, and A's
			// answer comes after B's command ended.
			answered, _ = startSwap("SWAP-300")
			noteOfB("swapping SWAP-300")
			_, written := a.Request("session/prompt", acptest.PromptParams(sidA, "WRITE-MANY"))
			if m := <-written; m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
				t.Fatalf("A's writes answered %s %+v", m.Result, m.Error)
			}
			stop(answered)

			// A write the editor holds while A's turn is cancelled: bridle
			// stops waiting, but the editor may still write. B's command
			// must wait for the editor's answer; if it runs, the editor
			// writes at its first link.
			release, held, heldDone := make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
			ed.mu.Lock()
			ed.hold, ed.held, ed.heldDone = release, held, heldDone
			ed.mu.Unlock()
			_, late := a.Request("session/prompt", acptest.PromptParams(sidA, "WRITE-ONE"))
			<-held
			a.Notify("session/cancel", map[string]string{"sessionId": sidA})
			if m := <-late; m.Error != nil || !strings.Contains(string(m.Result), "cancelled") {
				t.Fatalf("A's cancelled write answered %s %+v", m.Result, m.Error)
			}
			answered, calmNow := startSwap("SWAP-LATE")
			ranFirst := noteOfB("waiting for the editor", "swapping SWAP-LATE") == "swapping SWAP-LATE"
			if !ranFirst {
				calmNow() // the swapper waits: the editor may write now
			}
			ed.mu.Lock()
			ed.hold = nil
			ed.mu.Unlock()
			close(release)
			<-heldDone
			noteOfB("swapping SWAP-LATE") // once the editor has answered
			stop(answered)

			var outs []string
			linked := 0 // reads that met a.txt as the link
			for i, r := range results(t, a.DB, sidA) {
				out, _ := r["output"].(string)
				outs = append(outs, out)
				if i < reads && strings.Contains(out, "leads outside") {
					linked++
				}
			}
			if len(outs) != reads+writes+1 {
				t.Fatalf("%d results in A, want %d", len(outs), reads+writes+1)
			}
			leaked := 0
			for _, out := range outs[:reads] {
				if strings.Contains(out, marker) {
					leaked++
				}
			}
			ed.mu.Lock()
			defer ed.mu.Unlock()
			t.Logf("reads: %d tried, %d asked the editor, %d returned the outside file to the model, %d met the link; writes: %d tried, %d through the editor; the editor read the outside file %d times and wrote it %d times in all; B's last swapper ran while the editor held a write: %v",
				reads, readsAsked, leaked, linked, writes+1, ed.writes, ed.readsOutside, ed.writesOutside, ranFirst)
			if leaked > 0 || ed.readsOutside > 0 {
				t.Errorf("%d of %d reads returned the file outside the workspace to the model (the editor read it %d times)", leaked, reads, ed.readsOutside)
			}
			if log, _ := acptest.Run(t, "log", "--db", a.DB, "--json", sidA); strings.Contains(log, marker) {
				t.Errorf("A's log holds the outside file's text")
			}
			if ranFirst {
				t.Errorf("B's command ran while the editor still held a write bridle had given up")
			}
			if ed.writesOutside > 0 {
				t.Errorf("%d of %d writes overwrote the file outside the workspace", ed.writesOutside, writes+1)
			}
			if b, _ := os.ReadFile(outside); string(b) != marker+"\n" {
				t.Errorf("the file outside holds %q", b)
			}
			if linked == 0 {
				t.Errorf("no read met a.txt as a link: the swapper did not run during the reads, and the test proves nothing")
			}
			a.CloseStdin()
			if twoProcesses {
				b.CloseStdin()
			}
		})
	}
}
