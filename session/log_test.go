package session

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/tools"
)

// planModel plays one call per request from a plan, in order, whatever
// the request; a call may be made from the request (a read of the first
// address the window shows). Summary requests get a fixed summary. It
// keeps every request.
type planModel struct {
	mu   sync.Mutex
	plan []func(req provider.Request) scripted.Call
	n    int
	reqs []provider.Request
	// address is the first address of a dropped output a request showed.
	address string
	// usage makes each planned call report an input of its own.
	usage bool
}

func (m *planModel) Name() string { return "plan" }

func (m *planModel) Stream(ctx context.Context, req provider.Request) iter.Seq2[provider.Delta, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	if b, _ := json.Marshal(req.Messages); m.address == "" {
		if a := addressRE.FindSubmatch(b); a != nil {
			m.address = string(a[1])
		}
	}
	call := scripted.Call{Text: scripted.Chunks{`{"goal":"read the files","done":["read them"],"summary":"the files were read"}`}}
	if !strings.HasPrefix(req.System[0].Text, contextwin.SummaryMarker) {
		call = scripted.Call{Text: scripted.Chunks{"(the plan is over)"}}
		if m.n < len(m.plan) {
			call = m.plan[m.n](req)
		}
		if m.usage {
			// About the request's size, off by a share that moves from
			// call to call: the correction stays within its bounds, and
			// every call moves it.
			b, _ := json.Marshal(req.Messages)
			call.Usage = &provider.Usage{InputTokens: len(b) / 4 * (100 + m.n*7%30) / 100}
		}
		m.n++
	}
	m.mu.Unlock()
	return scripted.New(&scripted.Scenario{Sequential: true, Turns: []scripted.Turn{{Calls: []scripted.Call{call}}}}).Stream(ctx, req)
}

// requests returns every request as JSON, the session ids made alike.
func (m *planModel) requests(ids ...string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, len(m.reqs))
	for i, r := range m.reqs {
		b, _ := json.Marshal(r)
		out[i] = sameIDs(string(b), ids...)
	}
	return out
}

func sameIDs(s string, ids ...string) string {
	for i, id := range ids {
		s = strings.ReplaceAll(s, id, fmt.Sprintf("SESSION-%d", i))
	}
	return s
}

var addressRE = regexp.MustCompile(`read_artifact (r\d+)`)

// stubPlan is a session that outgrows a 10k window several times over:
// prompts of reads of the workspace's files, a read of an output the
// window dropped long before (by the first address it showed), a rewind
// to a prompt the window had compacted away, a fork, and a restart in
// between.
func (m *planModel) stubPlan(prompts int) []func(provider.Request) scripted.Call {
	read := func(i int) func(provider.Request) scripted.Call {
		return func(provider.Request) scripted.Call {
			c := toolCall("read_file", fmt.Sprintf(`{"path":"f%02d.txt"}`, i))
			c.Text = scripted.Chunks{fmt.Sprintf("Reading file %d. %s", i, strings.Repeat("Thinking about the lines and what they mean. ", 40))}
			return c
		}
	}
	say := func(text string) func(provider.Request) scripted.Call {
		return func(provider.Request) scripted.Call { return scripted.Call{Text: scripted.Chunks{text}} }
	}
	readAddress := func(req provider.Request) scripted.Call {
		return toolCall("read_artifact", fmt.Sprintf(`{"id":%q}`, m.address)) // m.mu is held
	}
	var plan []func(provider.Request) scripted.Call
	for p := range prompts {
		for i := range 6 {
			plan = append(plan, read((p*6+i)%30))
		}
		plan = append(plan, say(fmt.Sprintf("prompt %d done", p+1)))
	}
	plan = append(plan, readAddress, say("address read"))           // prompt prompts+1
	plan = append(plan, read(1), read(2), say("after the restart")) // prompts+2
	plan = append(plan, read(3), say("after the rewind"))           // prompts+4 (+3 is /rewind)
	plan = append(plan, read(4), say("in the fork"))                // the fork's prompt
	return plan
}

// stubCase is how stubRun plays stubPlan: the plan's prompts of reads,
// the model's tokenizer, and whether its calls report usage (the usage
// correction then applies to estimated counts).
type stubCase struct {
	name      string
	prompts   int
	tokenizer string
	usage     bool
}

// stubRun plays stubPlan in ws, keeping every event whole (the reference)
// or not, and returns the model's requests, what the editor was sent,
// the replays of both sessions, all as JSON, and the usage correction
// each of their requests applied; and how many events a
// session opened from the store held as stubs, and how many of those
// were model messages read without their usage (older than the calls the
// usage correction follows).
func stubRun(t *testing.T, ws string, c stubCase, whole bool) (requests, updates, replays, ratios []string, stubs, bareCalls int) {
	t.Helper()
	for i := range 30 {
		var b strings.Builder
		for j := range 40 {
			fmt.Fprintf(&b, "file %d line %d: the quick brown fox jumps over the lazy dog %d\n", i, j, i*j)
		}
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.txt", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	model := &planModel{usage: c.usage}
	model.plan = model.stubPlan(c.prompts)
	win, err := contextwin.New(config.Context{}, func(string) config.ModelSpec {
		return config.ModelSpec{Window: 10_000, MaxOutput: 1_000, Tokenizer: c.tokenizer}
	})
	if err != nil {
		t.Fatal(err)
	}
	ed := &recorder{}
	m := dataManager(t, model, Config{Client: ed, Window: win, Tools: []tools.Tool{tools.ReadFile{}, tools.ReadArtifact{}}})
	m.keepWhole = whole
	s := openSession(t, m, ws, "")
	ctx := context.Background()
	run := func(s *Session, text string) {
		t.Helper()
		if stop, err := prompt(t, s, text); err != nil || stop != StopEndTurn {
			t.Fatalf("%s: stop %s, err %v", text, stop, err)
		}
	}
	for p := range c.prompts + 1 {
		run(s, fmt.Sprintf("PROMPT-%d", p+1))
	}
	var seq int64
	fmt.Sscanf(model.address, "r%d", &seq)
	for _, e := range s.Events() {
		if _, stub := e.Payload.(*event.Stub); e.Seq == seq && stub == whole {
			t.Fatalf("the output read back by its address (%s) is held as a stub: %v, want %v", model.address, stub, !whole)
		}
	}
	// A file the model read in the first prompt changes, while no bridle
	// serves the session: the next one notes it.
	if err := os.WriteFile(filepath.Join(ws, "f01.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = reopenLike(t, m, s.ID())
	m = s.m
	run(s, fmt.Sprintf("PROMPT-%d", c.prompts+2))
	for _, e := range s.Events() {
		if st, ok := e.Payload.(*event.Stub); ok {
			stubs++
			if st.Of == event.KindAssistantMessage && st.Reported == 0 {
				bareCalls++
			}
		}
	}
	// The plan reaches what it tests: an output read back by its address
	// from before the window's start, a note on a file read before it.
	log, err := s.Log(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var artifact, note bool
	for _, e := range log {
		switch v := e.Payload.(type) {
		case event.ToolResult:
			artifact = artifact || v.Name == "read_artifact" && !v.IsError && strings.Contains(v.Output, "the quick brown fox")
		case event.FileChanged:
			note = note || strings.HasSuffix(v.Path, "f01.txt")
		}
	}
	if !artifact || !note {
		t.Fatalf("the plan read back a dropped output: %v; noted the change of a file read before the window's start: %v", artifact, note)
	}
	run(s, "/rewind 2")
	run(s, fmt.Sprintf("PROMPT-%d", c.prompts+4))
	fork, err := m.Fork(ctx, s.ID(), 3)
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Get(ctx, fork.ID)
	if err != nil {
		t.Fatal(err)
	}
	run(f, "PROMPT-FORK")
	ids := []string{s.ID(), fork.ID}
	ed.mu.Lock()
	for _, u := range ed.updates {
		b, _ := json.Marshal(u)
		updates = append(updates, sameIDs(string(b), ids...))
	}
	ed.updates = nil
	ed.mu.Unlock()
	// A fresh editor's view of both sessions.
	for _, id := range ids {
		r := reopenLike(t, m, id)
		m = r.m
		if err := r.Replay(ctx); err != nil {
			t.Fatal(err)
		}
		rec := r.m.cfg.Client.(*recorder)
		rec.mu.Lock()
		b, _ := json.Marshal(rec.updates)
		rec.updates = nil
		rec.mu.Unlock()
		replays = append(replays, sameIDs(string(b), ids...))
		log, err := r.Log(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range log {
			if a, ok := e.Payload.(event.ContextAssembled); ok {
				ratios = append(ratios, fmt.Sprintf("%d: %v", e.Seq, a.Ratio))
			}
		}
	}
	return model.requests(ids...), updates, replays, ratios, stubs, bareCalls
}

// A session that holds the events before its window's start as stubs
// sends the model, and shows the editor, exactly what one that holds
// them whole does: through compactions, dropped outputs read back by
// their address, a file read before the window's start changing, a
// restart, a rewind over compacted prompts, a fork, and replays.
//
// With estimated counts and usage reported, the session outgrows the
// calls the usage correction follows: a session opened from the store
// reads the usage of those calls alone, and corrects its counts as the
// session that saw every call did.
func TestStubsChangeNothingTheModelOrTheEditorSees(t *testing.T) {
	for _, c := range []stubCase{
		{name: "exact counts", prompts: 4, tokenizer: "o200k_base"},
		{name: "estimated counts corrected by usage", prompts: 14, tokenizer: "claude", usage: true},
	} {
		t.Run(c.name, func(t *testing.T) { testStubsChangeNothing(t, c) })
	}
}

func testStubsChangeNothing(t *testing.T, c stubCase) {
	ws := t.TempDir()
	wantReqs, wantUpdates, wantReplays, wantRatios, wholeStubs, _ := stubRun(t, ws, c, true)
	reqs, updates, replays, ratios, stubs, bareCalls := stubRun(t, ws, c, false)
	if wholeStubs != 0 || stubs == 0 {
		t.Fatalf("%d stubs held (whole: %d): the session never outgrew its window, or the reference has stubs", stubs, wholeStubs)
	}
	if c.usage && bareCalls == 0 {
		t.Fatalf("no model message before the window's start was left unread: the session did not outgrow the %d calls the usage correction follows", contextwin.RatioCalls)
	}
	compare := func(what string, got, want []string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d, want %d", what, len(got), len(want))
		}
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("%s %d differs:\n%s\nwant:\n%s", what, i, got[i], want[i])
				return
			}
		}
	}
	compare("request", reqs, wantReqs)
	compare("update", updates, wantUpdates)
	compare("replay", replays, wantReplays)
	compare("usage correction", ratios, wantRatios)
	joined := strings.Join(reqs, "\n")
	for _, want := range []string{"f01.txt", "changed"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no request holds %q: the plan did not reach what it tests", want)
		}
	}
}

// reopenLike is reopen for a Manager that may keep its events whole.
func reopenLike(t *testing.T, m *Manager, id string) *Session {
	t.Helper()
	m.Shutdown()
	m2 := NewManager(m.cfg)
	m2.keepWhole = m.keepWhole
	t.Cleanup(m2.Shutdown)
	s, err := m2.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
