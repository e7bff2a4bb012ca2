package session

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// recorder is an editor that keeps the updates it is sent.
type recorder struct {
	mu      sync.Mutex
	updates []acp.SessionUpdate
}

func (r *recorder) Update(_ context.Context, _ string, u acp.SessionUpdate) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u)
	return nil
}

func (r *recorder) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: "allow_once"}}}, nil
}

// dump is a tool that prints n numbered lines.
type dump struct{}

func (dump) Name() string        { return "dump" }
func (dump) Description() string { return "Print lines." }
func (dump) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"lines":{"type":"integer"}}}`)
}
func (dump) Kind() tools.Kind          { return tools.KindRead }
func (dump) Effect() permission.Effect { return permission.EffectRead }
func (dump) Preview(context.Context, *tools.Env, json.RawMessage) (tools.Preview, error) {
	return tools.Preview{Title: "dump"}, nil
}
func (dump) Run(_ context.Context, _ *tools.Env, input json.RawMessage) tools.Result {
	var in struct{ Lines int }
	json.Unmarshal(input, &in)
	var b strings.Builder
	for i := range in.Lines {
		fmt.Fprintf(&b, "row %d: status=ok value=%d owner=team-%d\n", i, i*7919%1000, i%9)
	}
	return tools.Result{Output: b.String(), Artifact: fmt.Sprintf("dump-%d", in.Lines)}
}

// newTestManager runs sessions on sc with a 10,000-token window.
func newTestManager(t testing.TB, sc *scripted.Scenario) (*Manager, *recorder) {
	t.Helper()
	st := testStore(t)
	win, err := contextwin.New(config.Context{}, func(string) config.ModelSpec {
		return config.ModelSpec{Window: 10_000, MaxOutput: 1_000, Tokenizer: "o200k_base"}
	})
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(sc)
	rec := &recorder{}
	m := NewManager(Config{
		Store: st, Client: rec, DefaultModel: func(string) string { return "scripted/test" }, Tools: []tools.Tool{dump{}}, Window: win,
		OpenModel: func(context.Context, string, string) (provider.Provider, error) { return p, nil },
	})
	t.Cleanup(m.Shutdown)
	return m, rec
}

// testStore is a database in a temporary directory, closed when t ends.
func testStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "bridle.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func prompt(t *testing.T, s *Session, text string) (StopReason, error) {
	t.Helper()
	return s.Prompt(context.Background(), []event.Content{{Type: "text", Text: text}})
}

// longTurn makes calls model calls that each say a lot and dump rows.
func longTurn(calls int) scripted.Turn {
	var tr scripted.Turn
	for i := range calls {
		tr.Calls = append(tr.Calls, scripted.Call{
			Text:      scripted.Chunks{fmt.Sprintf("Step %d. %s", i, strings.Repeat("Thinking about the rows and what they mean. ", 60))},
			ToolCalls: []scripted.ToolCall{{Name: "dump", Input: json.RawMessage(fmt.Sprintf(`{"lines":%d}`, 80+i))}},
		})
	}
	tr.Calls = append(tr.Calls, scripted.Call{Text: scripted.Chunks{"Done."}})
	return tr
}

func TestTurnCompactsWithTheSessionModelAndReportsOccupancy(t *testing.T) {
	sc := &scripted.Scenario{Sequential: true, Turns: []scripted.Turn{longTurn(14)}}
	for range 40 {
		sc.Summaries = append(sc.Summaries, scripted.Call{Text: scripted.Chunks{`{"goal":"read the rows","done":["dumped rows"],"handles":["artifact dump-80"]}`}})
	}
	m, rec := newTestManager(t, sc)
	info, err := m.New(context.Background(), NewParams{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Get(context.Background(), info.ID)
	if _, err := prompt(t, s, "/decision rows are read in order"); err != nil {
		t.Fatal(err)
	}
	if stop, err := prompt(t, s, "Read all the rows."); err != nil || stop != StopEndTurn {
		t.Fatalf("stop %s, err %v", stop, err)
	}
	var assembled, compactions int
	log, err := s.Log(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		switch v := e.Payload.(type) {
		case event.ContextAssembled:
			assembled++
			if v.Used()+1_000 > v.Window {
				t.Fatalf("seq %d: %d tokens leave no room for the answer in %d", e.Seq, v.Used(), v.Window)
			}
		case event.Compaction:
			compactions++
			if v.Goal != "read the rows" || v.Through == 0 || e.Tokens == 0 {
				t.Fatalf("compaction %+v stored with %d tokens", v, e.Tokens)
			}
		case event.ToolResult:
			if e.Tokens == 0 {
				t.Fatalf("tool result at %d stored without its token count", e.Seq)
			}
		}
	}
	if assembled != 15 || compactions == 0 {
		t.Fatalf("%d context_assembled for 15 model calls, %d compactions", assembled, compactions)
	}
	usage := 0
	for _, u := range rec.updates {
		if u.UsageUpdate != nil {
			usage++
			if u.UsageUpdate.Size != 10_000 {
				t.Fatalf("usage size %d", u.UsageUpdate.Size)
			}
		}
	}
	if usage != assembled {
		t.Fatalf("%d usage updates for %d assemblies", usage, assembled)
	}
	if p := contextwin.PinsOf(s.Events()); len(p.Decisions) != 1 {
		t.Fatalf("pins after compaction: %+v", p)
	}
}

func TestAFailedSummaryDoesNotCostTheTurn(t *testing.T) {
	sc := &scripted.Scenario{Sequential: true, Turns: []scripted.Turn{longTurn(14)},
		Summaries: []scripted.Call{{Fail: &scripted.Failure{Kind: provider.ErrContextLength, Message: "prompt is too long"}}}}
	m, _ := newTestManager(t, sc)
	info, _ := m.New(context.Background(), NewParams{Cwd: t.TempDir()})
	s, _ := m.Get(context.Background(), info.ID)
	if stop, err := prompt(t, s, "Read all the rows."); err != nil || stop != StopEndTurn {
		t.Fatalf("stop %s, err %v: a failed summary should not end the turn", stop, err)
	}
	failed, compactions := 0, 0
	log, err := s.Log(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		switch v := e.Payload.(type) {
		case event.ProviderError:
			// Not retried: a request that is too long stays too long.
			if v.Final || v.ErrKind != string(provider.ErrContextLength) || !strings.Contains(v.Message, "compact the history") {
				t.Fatalf("recorded %+v", v)
			}
			failed++
		case event.Compaction:
			compactions++
		case event.ContextAssembled:
			if v.Used()+1_000 > v.Window {
				t.Fatalf("a request without its compaction overflowed: %+v", v)
			}
		}
	}
	// The first summary fails; later ones fall back to the scripted default.
	if failed != 1 || compactions == 0 {
		t.Fatalf("%d failures and %d compactions recorded", failed, compactions)
	}
}
