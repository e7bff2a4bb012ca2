package session

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/session/checkpoint"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// requests is a provider that keeps the requests it is sent.
type requests struct {
	provider.Provider
	mu  sync.Mutex
	all []provider.Request
}

func (r *requests) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	r.mu.Lock()
	r.all = append(r.all, req)
	r.mu.Unlock()
	return r.Provider.Stream(ctx, req)
}

// lastRequest is the last request as sent, without the model name.
func (r *requests) lastRequest() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	req := r.all[len(r.all)-1]
	b, _ := json.MarshalIndent(struct {
		System   []provider.SystemBlock
		Tools    []provider.Tool
		Messages []provider.Message
	}{req.System, req.Tools, req.Messages}, "", " ")
	return string(b)
}

func (r *requests) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := json.Marshal(r.all[len(r.all)-1].Messages)
	return string(b)
}

// overwriting is an editor whose user answers a rewind's question.
type overwriting struct {
	recorder
	yes   bool
	asked int
}

func (o *overwriting) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	o.asked++
	opt := optRejectOnce
	if o.yes {
		opt = optAllowOnce
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: opt}}}, nil
}

func toolCall(name, input string) scripted.Call {
	return scripted.Call{ToolCalls: []scripted.ToolCall{{Name: name, Input: json.RawMessage(input)}}}
}

// dataManager is a Manager on a fresh SQLite file, with a data directory
// (checkpoints, the snapshot), whose sessions all play p; cfg gives the
// rest (the editor defaults to a recorder).
func dataManager(t *testing.T, p provider.Provider, cfg Config) *Manager {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "bridle.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Store, cfg.DataDir = st, filepath.Join(dir, "data")
	cfg.DefaultModel = func(string) string { return "scripted/test" }
	cfg.OpenModel = func(context.Context, string, string) (provider.Provider, error) { return p, nil }
	if cfg.Client == nil {
		cfg.Client = &recorder{}
	}
	m := NewManager(cfg)
	t.Cleanup(m.Shutdown)
	return m
}

// openSession starts a session of m in cwd, in mode ("" leaves the
// default).
func openSession(t testing.TB, m *Manager, cwd, mode string) *Session {
	t.Helper()
	ctx := context.Background()
	info, err := m.New(ctx, NewParams{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Get(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if mode != "" {
		if err := s.SetMode(ctx, mode); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// rewindRig is a session in auto-edit mode with the file tools, a data
// directory for checkpoints, and three prompts that change files.
func rewindRig(t *testing.T, ed Client) (*Manager, *Session, *requests, string) {
	t.Helper()
	sc := &scripted.Scenario{Turns: []scripted.Turn{
		{Match: "PROMPT-ONE", Calls: []scripted.Call{toolCall("write_file", `{"path":"a.txt","content":"v1\n"}`), {Text: scripted.Chunks{"one done"}}}},
		{Match: "PROMPT-TWO", Calls: []scripted.Call{toolCall("edit_file", `{"path":"a.txt","old_string":"v1","new_string":"v2"}`),
			toolCall("write_file", `{"path":"b.txt","content":"new\n"}`), {Text: scripted.Chunks{"two done"}}}},
		{Match: "PROMPT-THREE", Calls: []scripted.Call{toolCall("edit_file", `{"path":"a.txt","old_string":"v2","new_string":"v3"}`), {Text: scripted.Chunks{"three done"}}}},
		{Match: "PROMPT-FOUR", Calls: []scripted.Call{{Text: scripted.Chunks{"four done"}}}},
	}}
	p := &requests{Provider: scripted.New(sc)}
	m := dataManager(t, p, Config{Client: ed, Tools: []tools.Tool{tools.EditFile{}, tools.WriteFile{}}})
	ws := t.TempDir()
	s := openSession(t, m, ws, "auto-edit")
	for _, text := range []string{"PROMPT-ONE", "PROMPT-TWO", "PROMPT-THREE"} {
		if stop, err := prompt(t, s, text); err != nil || stop != StopEndTurn {
			t.Fatalf("%s: stop %s, err %v", text, stop, err)
		}
	}
	if got := readFile(t, ws, "a.txt"); got != "v3\n" {
		t.Fatalf("a.txt = %q before the rewind", got)
	}
	return m, s, p, ws
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if os.IsNotExist(err) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// /rewind 2 puts a.txt back as prompt 1 left it and removes b.txt, which
// prompt 2 created; the next request shows the model no trace of prompts
// 2 and 3.
func TestRewindPutsFilesAndTheConversationBack(t *testing.T) {
	_, s, p, ws := rewindRig(t, &recorder{})
	if stop, err := prompt(t, s, "/rewind 2"); err != nil || stop != StopEndTurn {
		t.Fatalf("rewind: stop %s, err %v", stop, err)
	}
	if a, b := readFile(t, ws, "a.txt"), readFile(t, ws, "b.txt"); a != "v1\n" || b != "<none>" {
		t.Fatalf("after /rewind 2: a.txt %q, b.txt %q; want v1 and none", a, b)
	}
	if _, err := prompt(t, s, "PROMPT-FOUR"); err != nil {
		t.Fatal(err)
	}
	req := p.last()
	for _, gone := range []string{"PROMPT-TWO", "PROMPT-THREE", "two done", "three done", "v2"} {
		if strings.Contains(req, gone) {
			t.Errorf("after the rewind the model still sees %q", gone)
		}
	}
	if !strings.Contains(req, "PROMPT-ONE") || !strings.Contains(req, "one done") || !strings.Contains(req, "PROMPT-FOUR") {
		t.Errorf("after the rewind the request lost what came before prompt 2: %.400s", req)
	}
	var rw *event.Rewound
	for _, e := range s.Events() {
		if v, ok := e.Payload.(event.Rewound); ok {
			rw = &v
		}
	}
	if rw == nil || rw.Turn != 2 || len(rw.Restored) != 2 || len(rw.Kept) != 0 {
		t.Fatalf("rewound event %+v", rw)
	}
}

// A file the user changed after the agent is put back only if the user
// says so; refused, it is left alone and named.
func TestRewindAsksBeforeOverwritingTheUsersChanges(t *testing.T) {
	for _, yes := range []bool{false, true} {
		ed := &overwriting{yes: yes}
		_, s, _, ws := rewindRig(t, ed)
		if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := prompt(t, s, "/rewind 2"); err != nil {
			t.Fatal(err)
		}
		want := "mine\n"
		if yes {
			want = "v1\n"
		}
		if a, b := readFile(t, ws, "a.txt"), readFile(t, ws, "b.txt"); ed.asked != 1 || a != want || b != "<none>" {
			t.Fatalf("answer %v: asked %d times, a.txt %q (want %q), b.txt %q", yes, ed.asked, a, want, b)
		}
	}
}

// A rewind cut short after its plan was recorded is finished when the
// session is opened again.
func TestRewindCutShortIsFinishedOnOpen(t *testing.T) {
	m, s, _, ws := rewindRig(t, &recorder{})
	events := s.Events()
	from := promptSeqs(events)[1]
	order, before, after := changesSince(events, from)
	var files []event.FileRestore
	for _, path := range order {
		files = append(files, event.FileRestore{Path: path, From: after[path], To: before[path]})
	}
	ctx := context.Background()
	if _, err := s.append(ctx, event.RewindStarted{Turn: 2, From: from, Files: files}); err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, m, s.ID())
	if a, b := readFile(t, ws, "a.txt"), readFile(t, ws, "b.txt"); a != "v1\n" || b != "<none>" {
		t.Fatalf("after reopening: a.txt %q, b.txt %q", a, b)
	}
	last := s2.Events()[len(s2.Events())-2]
	if _, ok := last.Payload.(event.Rewound); !ok {
		t.Fatalf("the rewind was not closed: last events end with %s", last.Kind())
	}
}

// reopen stops m, as a killed process would leave it, and opens session
// id in a new Manager on the same store and data.
func reopen(t *testing.T, m *Manager, id string) *Session {
	t.Helper()
	m.Shutdown()
	m2 := NewManager(m.cfg)
	t.Cleanup(m2.Shutdown)
	s, err := m2.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A log whose rewind ended without its turn's end (as an earlier bridle
// could leave it, committing the two apart) gets the turn's end on open.
func TestRewindWithoutItsTurnsEndIsClosedOnOpen(t *testing.T) {
	m, s, _, _ := rewindRig(t, &recorder{})
	events := s.Events()
	from := promptSeqs(events)[1]
	ctx := context.Background()
	if _, err := s.append(ctx, event.RewindStarted{Turn: 2, From: from}, event.Rewound{Turn: 2, From: from}); err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, m, s.ID())
	evs := s2.Events()
	if _, ok := evs[len(evs)-1].Payload.(event.TurnFinished); !ok {
		t.Fatalf("the rewind's turn was not closed: the log ends with %s", evs[len(evs)-1].Kind())
	}
	if _, ok := evs[len(evs)-2].Payload.(event.Rewound); !ok {
		t.Fatalf("the log does not end with the rewind and its turn's end: %s", evs[len(evs)-2].Kind())
	}
}

// After a rewind the model's next request is the one a session that
// never had the rewound prompts would send, byte for byte.
func TestRewoundSessionAsksAsIfTheTurnsNeverHappened(t *testing.T) {
	_, s, p, _ := rewindRig(t, &recorder{})
	if _, err := prompt(t, s, "/rewind 2"); err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(t, s, "PROMPT-FOUR"); err != nil {
		t.Fatal(err)
	}
	rewound := p.lastRequest()

	// The same session without prompts 2 and 3.
	fresh := &requests{Provider: scripted.New(&scripted.Scenario{Turns: []scripted.Turn{
		{Match: "PROMPT-ONE", Calls: []scripted.Call{toolCall("write_file", `{"path":"a.txt","content":"v1\n"}`), {Text: scripted.Chunks{"one done"}}}},
		{Match: "PROMPT-FOUR", Calls: []scripted.Call{{Text: scripted.Chunks{"four done"}}}},
	}})}
	m := dataManager(t, fresh, Config{Tools: []tools.Tool{tools.EditFile{}, tools.WriteFile{}}})
	f := openSession(t, m, s.Info().Cwd, "auto-edit")
	os.Remove(filepath.Join(s.Info().Cwd, "a.txt")) // as before the first prompt
	for _, text := range []string{"PROMPT-ONE", "PROMPT-FOUR"} {
		if _, err := prompt(t, f, text); err != nil {
			t.Fatal(err)
		}
	}
	want := fresh.lastRequest()
	if rewound != want {
		t.Fatalf("after the rewind the request differs from a session that never had the turns:\n%s\nwant:\n%s", rewound, want)
	}
}

// /rewind undo takes the last rewind back: its files return to what it
// replaced, and the model sees the rewound prompts again.
func TestRewindCanBeUndone(t *testing.T) {
	_, s, p, ws := rewindRig(t, &recorder{})
	for _, cmd := range []string{"/rewind 2", "/rewind undo"} {
		if stop, err := prompt(t, s, cmd); err != nil || stop != StopEndTurn {
			t.Fatalf("%s: stop %s, err %v", cmd, stop, err)
		}
	}
	if a, b := readFile(t, ws, "a.txt"), readFile(t, ws, "b.txt"); a != "v3\n" || b != "new\n" {
		t.Fatalf("after undoing the rewind: a.txt %q, b.txt %q; want v3 and new", a, b)
	}
	if _, err := prompt(t, s, "PROMPT-FOUR"); err != nil {
		t.Fatal(err)
	}
	if req := p.last(); !strings.Contains(req, "PROMPT-TWO") || !strings.Contains(req, "three done") {
		t.Errorf("after the undo the model does not see prompts 2 and 3 again: %.300s", req)
	}
	// The editor's list agrees: no prompt is rewound any more.
	ps, err := s.Prompts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range ps {
		if pv.Rewound {
			t.Errorf("prompt %d (%s) is still listed as rewound after the undo", pv.N, pv.Text)
		}
	}
	if _, err := prompt(t, s, "/rewind undo"); err == nil || !strings.Contains(err.Error(), "there is no rewind to undo") {
		t.Fatalf("a second undo: %v", err)
	}
}

// Over a thousand edits a session's checkpoints stay within their bound,
// the oldest going first, and the user is told once.
func TestCheckpointsStayWithinTheirBound(t *testing.T) {
	ctx := context.Background()
	var calls []scripted.Call
	for i := range 1_000 {
		content := strings.Repeat(fmt.Sprintf("edit %d\n", i), 128) // about 1 KiB, each different
		calls = append(calls, toolCall("write_file", fmt.Sprintf(`{"path":"a.txt","content":%q}`, content)))
	}
	calls = append(calls, scripted.Call{Text: scripted.Chunks{"done"}})
	p := scripted.New(&scripted.Scenario{Sequential: true, Turns: []scripted.Turn{{Calls: calls}}})
	rec := &recorder{}
	const bound = 64 << 10
	m := dataManager(t, p, Config{Client: rec, CheckpointBytes: bound, MaxIterations: 2_000, Tools: []tools.Tool{tools.WriteFile{}}})
	s := openSession(t, m, t.TempDir(), "")
	s.Ready(ctx)
	if err := s.SetMode(ctx, "auto-edit"); err != nil {
		t.Fatal(err)
	}
	if stop, err := prompt(t, s, "write a lot"); err != nil || stop != StopEndTurn {
		t.Fatalf("stop %s, err %v", stop, err)
	}
	var total int64
	entries, _ := os.ReadDir(checkpoint.Dir(m.cfg.DataDir, s.ID()))
	for _, e := range entries {
		fi, _ := e.Info()
		total += fi.Size()
	}
	if total > bound || len(entries) < 10 {
		t.Fatalf("%d checkpoints take %d bytes; want at most %d, and the newest kept", len(entries), total, bound)
	}
	told := 0
	for _, u := range rec.updates {
		if u.AgentMessageChunk != nil && strings.Contains(TextOf(u.AgentMessageChunk), "oldest checkpoints were removed") {
			told++
		}
	}
	if told != 1 {
		t.Fatalf("the user was told %d times that checkpoints were removed, want once", told)
	}
}

// TestPromptNumberCommands: /rewind and /fork read the prompt's number
// the same way, digits as /rewind lists them; any other spelling is
// refused with the form to use, never read as some number.
func TestPromptNumberCommands(t *testing.T) {
	for _, c := range []struct {
		text string
		n    int // 0: refused
	}{
		{"1", 1}, {"12", 12}, {" 3 ", 3}, {"\t2", 2},
		{"+1", 0}, {"-1", 0}, {"0", 0}, {"01", 0}, {"1.0", 0}, {"0x1", 0}, {"1e0", 0}, {"1_0", 0},
		{"١", 0}, {"１", 0}, {"1 2", 0}, {"one", 0}, {"99999999999999999999999", 0},
	} {
		for _, cmd := range []string{"/rewind", "/fork"} {
			content := []event.Content{{Type: "text", Text: cmd + " " + c.text}}
			read := rewindCommand
			if cmd == "/fork" {
				read = forkCommand
			}
			n, ok, err := read(content)
			switch {
			case !ok:
				t.Errorf("%s %q: not read as %s", cmd, c.text, cmd)
			case c.n == 0 && (err == nil || !strings.Contains(err.Error(), "in digits counted from 1") || !strings.Contains(err.Error(), fmt.Sprintf("%q", strings.TrimSpace(c.text)))):
				t.Errorf("%s %q: %d, %v; want a refusal naming the argument and the form", cmd, c.text, n, err)
			case c.n != 0 && (err != nil || n != c.n):
				t.Errorf("%s %q: %d, %v; want %d", cmd, c.text, n, err, c.n)
			}
		}
	}
	// A tab after the name is white space like a space; a name that only
	// starts like the command is another.
	if n, ok, err := rewindCommand([]event.Content{{Type: "text", Text: "/rewind\t2"}}); !ok || err != nil || n != 2 {
		t.Errorf("/rewind<TAB>2: %d %v %v", n, ok, err)
	}
	if _, ok, _ := rewindCommand([]event.Content{{Type: "text", Text: "/rewinds 2"}}); ok {
		t.Error("/rewinds read as /rewind")
	}
}
