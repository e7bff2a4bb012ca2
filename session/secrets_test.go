package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/workspace"
)

// TestSessionsOnAWorkspaceShareItsSpace: two sessions on one workspace
// use one watcher and one list of .env files; another workspace has its
// own; the watcher starts once the editor has a session, not with it,
// and outlives the last session by a grace (not at shutdown). The space's
// own bookkeeping is space's test.
func TestSessionsOnAWorkspaceShareItsSpace(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	m, _ := newTestManager(t, &scripted.Scenario{})
	m.spaces.Grace = time.Hour // the test, not a timer, says when it ends
	open := func(cwd string) *Session { return openReady(t, m, cwd) }
	info, err := m.New(context.Background(), NewParams{Cwd: other})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := m.Get(context.Background(), info.ID); s.space.Watcher() != nil {
		t.Error("the watcher started with session/new")
	}
	a, b, c := open(dir), open(dir), open(other)
	if a.space != b.space || a.space.DotEnvs() != b.space.DotEnvs() || a.space.Watcher() == nil {
		t.Fatal("two sessions on one workspace do not share one watched space")
	}
	if c.space == a.space {
		t.Fatal("another workspace shares the first one's space")
	}
	w := a.space.Watcher()
	if err := m.Close(context.Background(), a.ID()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.Sync(ctx); err != nil {
		t.Fatalf("the watcher stopped while a session still uses it: %v", err)
	}
	if err := m.Close(context.Background(), b.ID()); err != nil {
		t.Fatal(err)
	}
	// Opened again within the grace, the space has its walk still.
	if err := w.Sync(ctx); err != nil {
		t.Fatalf("the watcher stopped as soon as the last session closed: %v", err)
	}
	if d := open(dir); d.space != a.space || d.space.Watcher() != w {
		t.Fatal("a session opened again within the grace got a new space")
	} else if err := m.Close(context.Background(), d.ID()); err != nil {
		t.Fatal(err)
	}
	// Shutdown does not wait for the grace.
	m.Shutdown()
	if err := w.Sync(ctx); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("the watcher runs on after shutdown: %v", err)
	}
	if err := c.space.Watcher().Sync(ctx); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("the other workspace's watcher runs on after shutdown: %v", err)
	}
}

// TestSpaceStopsAfterItsGrace: the last session closed, the space's
// watcher stops once the grace is over, and a session opened after that
// gets a new one.
func TestSpaceStopsAfterItsGrace(t *testing.T) {
	dir := t.TempDir()
	m, _ := newTestManager(t, &scripted.Scenario{})
	stopped := make(chan struct{}, 1)
	m.testHook = func(point string) {
		if point == "space stopped" {
			stopped <- struct{}{}
		}
	}
	m.spaces.Grace = time.Millisecond
	a := openReady(t, m, dir)
	w := a.space.Watcher()
	if err := m.Close(context.Background(), a.ID()); err != nil {
		t.Fatal(err)
	}
	<-stopped
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.Sync(ctx); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("the watcher runs on after the grace: %v", err)
	}
	if b := openReady(t, m, dir); b.space == a.space || b.space.Watcher() == w {
		t.Error("a session opened after the grace got the stopped space")
	}
}

// openReady starts a session in cwd that the editor has: its watcher
// starts.
func openReady(t *testing.T, m *Manager, cwd string) *Session {
	t.Helper()
	info, err := m.New(context.Background(), NewParams{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Get(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	s.Ready(context.Background())
	return s
}

// TestDotEnvMadeMidTurnIsRedacted: a .env file made during a turn, twelve
// directories down, counts from the next call on: its own read, and a
// file read before it existed, which the tool-output cache must not
// serve as it was.
func TestDotEnvMadeMidTurnIsRedacted(t *testing.T) {
	const value = "made-mid-turn-" + "Qz81Vw3K"
	dir := t.TempDir()
	deep := filepath.Join(dir, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("the key is "+value+"\n"), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(notes, old, old) // out of the cache's racy window: it may keep the read
	rel := "a/b/c/d/e/f/g/h/i/j/k/l/.env"
	sc := &scripted.Scenario{Turns: []scripted.Turn{{Calls: []scripted.Call{
		call("read_file", `{"path":"notes.txt"}`),
		call("user_edit", `{"text":"API_KEY=`+value+`\n"}`),
		call("read_file", `{"path":"notes.txt"}`),
		call("read_file", `{"path":"`+rel+`"}`),
		{Text: scripted.Chunks{"Done."}},
	}}}}
	s := toolSession(t, sc, dir, userEdit{path: filepath.Join(deep, ".env")})
	if stop, err := prompt(t, s, "go"); err != nil || stop != StopEndTurn {
		t.Fatalf("prompt: %v %v", stop, err)
	}
	var reads []string
	for _, e := range s.Events() {
		if r, ok := e.Payload.(event.ToolResult); ok && r.Name == "read_file" {
			reads = append(reads, r.Output)
		}
	}
	if len(reads) != 3 {
		t.Fatalf("%d reads, want 3", len(reads))
	}
	if !strings.Contains(reads[0], value) {
		t.Errorf("the read before the .env existed lost the value: %q", reads[0])
	}
	for i, out := range reads[1:] {
		if strings.Contains(out, value) || !strings.Contains(out, "[REDACTED:"+rel+":API_KEY]") {
			t.Errorf("read %d after the .env was made: %q", i+2, out)
		}
	}
}

// stuckWalk is a watcher whose first walk never ends.
type stuckWalk struct{}

func (stuckWalk) Sync(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func (stuckWalk) Degraded() string { return "" }

// TestCallWaitsForTheDotEnvList: while the list of .env files is not
// known, a tool call waits for it, then is not run and says why; the
// prompt goes on and the user is told.
func TestCallWaitsForTheDotEnvList(t *testing.T) {
	const value = "not-yet-known-" + "Hk27Pq9X"
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".env"), []byte("K="+value+"\n"), 0o644)
	sc := &scripted.Scenario{Turns: []scripted.Turn{{Calls: []scripted.Call{
		call("read_file", `{"path":".env"}`),
		{Text: scripted.Chunks{"Done."}},
	}}}}
	s := toolSession(t, sc, dir)
	s.m.secretsWait = 50 * time.Millisecond
	s.space.Start()
	s.space.DotEnvs().Watch(stuckWalk{})
	if stop, err := prompt(t, s, "go"); err != nil || stop != StopEndTurn {
		t.Fatalf("prompt: %v %v", stop, err)
	}
	logged, _ := json.Marshal(s.Events())
	if strings.Contains(string(logged), value) {
		t.Errorf("the .env value reached the log while its file was not known")
	}
	var res event.ToolResult
	for _, e := range s.Events() {
		if r, ok := e.Payload.(event.ToolResult); ok {
			res = r
		}
	}
	if !res.IsError || !strings.HasPrefix(res.Output, "Not run: bridle is still looking for the workspace's .env files") {
		t.Errorf("the call's result = %+v, want it not run and saying why", res)
	}
}
