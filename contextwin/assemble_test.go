package contextwin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
)

// small is a model whose window fills in a few calls: 7,000 tokens of
// input budget after 1,000 reserved for the answer.
var small = config.ModelSpec{Window: 8_000, MaxOutput: 1_000, Tokenizer: "o200k_base"}

func TestAssemblyOrderAndCacheBreakpoints(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.add(event.ConstraintPinned{Text: "never touch migrations/", Source: "user"})
	l.prompt("Fix the flaky test in store/.")
	l.tool("run", `{"command":"go test ./store"}`, "FAIL TestAppend", "")
	l.add(event.DecisionRecorded{Text: "retry the write, do not mock the clock", Source: "model"})
	in := l.input()
	in.Project = "Use tabs. Run make lint before committing."
	a, err := l.w.Assemble(in)
	if err != nil {
		t.Fatal(err)
	}
	r := a.Request
	if len(r.System) != 2 || r.System[0].Text != "You are a test agent." || r.System[0].Cache ||
		!strings.Contains(r.System[1].Text, "make lint") || !r.System[1].Cache {
		t.Fatalf("system blocks = %+v, want the prompt then the project instructions, cached after the last", r.System)
	}
	if !r.CacheTools || len(r.Tools) != 1 {
		t.Fatalf("tools = %+v cache=%v", r.Tools, r.CacheTools)
	}
	head := r.Messages[0]
	if head.Role != provider.RoleUser || !head.Cache || head.Parts[0].Text != "Fix the flaky test in store/." {
		t.Fatalf("first message = %+v, want the first request verbatim, cached", head)
	}
	pins := head.Parts[1].Text
	if !strings.Contains(pins, "never touch migrations/") || !strings.Contains(pins, "retry the write") ||
		strings.Index(pins, "Constraints") > strings.Index(pins, "Decisions") {
		t.Fatalf("pins part = %q", pins)
	}
	last := r.Messages[len(r.Messages)-1]
	tail := last.Parts[len(last.Parts)-1]
	if tail.Kind != provider.PartText || !strings.HasPrefix(tail.Text, ReminderPrefix) || !strings.Contains(tail.Text, "never touch migrations/") ||
		strings.Contains(tail.Text, "retry the write") {
		t.Fatalf("the request does not end with a reminder of the constraints only: %+v", tail)
	}
	if last.Parts[0].Kind != provider.PartToolResult {
		t.Fatalf("the reminder should follow the tool result in the last message: %+v", last)
	}
	if !r.Messages[1].Cache || r.Messages[1].Role != provider.RoleAssistant {
		t.Fatalf("the last assistant message should carry the history breakpoint: %+v", r.Messages[1])
	}
}

func TestBudgetReservesTheAnswerAndRefusesWhatCannotFit(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("hello")
	a := l.assemble()
	if a.Request.MaxTokens != 1_000 {
		t.Fatalf("max_tokens = %d, want the model's 1,000", a.Request.MaxTokens)
	}

	l = newLog(t, config.Context{}, small)
	l.prompt(lines(800, "huge prompt"))
	_, err := l.w.Assemble(l.input())
	if !errors.Is(err, ErrTooBig) || !strings.Contains(err.Error(), "larger window") {
		t.Fatalf("err = %v, want ErrTooBig saying what to do", err)
	}
}

func TestUnderTheFirstThresholdNothingChanges(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("look around")
	for i := range 5 {
		l.tool("run", `{"command":"ls"}`, lines(10, "ls"), "")
		a := l.assemble()
		if a.Occupancy.Action != ActionNone || len(a.Occupancy.Dropped) > 0 || a.Compact {
			t.Fatalf("call %d at %d tokens: action %s, dropped %v", i, a.Used(), a.Occupancy.Action, a.Occupancy.Dropped)
		}
		if strings.Contains(requestText(a.Request), "dropped to save context") {
			t.Fatalf("an output was dropped under the threshold")
		}
	}
}

func TestOldOutputsDropInOneBatchToTheLowWaterMark(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	lim := l.w.Limits(l.spec)
	l.prompt("find the bug")
	var results []event.Event
	var a Assembly
	for a.Occupancy.Action != ActionDrop {
		results = append(results, l.tool("run", `{"command":"grep -r bug"}`, lines(60, "grep"), "art_"+string(rune('a'+len(results)))))
		a = l.assemble()
		if len(results) > 20 {
			t.Fatal("never dropped")
		}
	}
	if a.Used() > lim.LowWater {
		t.Fatalf("after the batch the window holds %d tokens, above the low-water mark %d", a.Used(), lim.LowWater)
	}
	// Oldest first, and none of the last three turns.
	for i, seq := range a.Occupancy.Dropped {
		if seq != results[i].Seq {
			t.Fatalf("dropped %v, want the oldest outputs first (%d...)", a.Occupancy.Dropped, results[0].Seq)
		}
	}
	if n := len(a.Occupancy.Dropped); n > len(results)-3 {
		t.Fatalf("dropped %d of %d outputs: the last three turns must keep theirs", n, len(results))
	}
	text := requestText(a.Request)
	want := "[output of `run {\"command\":\"grep -r bug\"}` (60 lines, "
	if !strings.Contains(text, want) || !strings.Contains(text, "artifact art_a; read_artifact art_a") {
		t.Fatalf("no address for the dropped output in:\n%s", text)
	}
	// The batch holds: the next call drops nothing new and shows the same
	// addresses (the cache broke once).
	l.tool("run", `{"command":"ls"}`, "a\nb\n", "")
	b := l.assemble()
	if b.Occupancy.Action != ActionNone || strings.Count(requestText(b.Request), "dropped to save context") != len(a.Occupancy.Dropped) {
		t.Fatalf("next call: action %s, want none with the same %d addresses", b.Occupancy.Action, len(a.Occupancy.Dropped))
	}
	if a.Occupancy.PrefixHash != b.Occupancy.PrefixHash {
		t.Fatal("the stable prefix changed between calls")
	}
}

func TestProtectedTurnsAreDroppedOnlyToFit(t *testing.T) {
	// Three huge outputs in the last three turns do not fit together: the
	// proof drops the oldest of them rather than overflow.
	l := newLog(t, config.Context{}, small)
	l.prompt("dump everything")
	for range 3 {
		l.add(event.AssistantMessage{Text: "dumping", ToolCalls: []event.ToolCall{
			{ID: "a" + string(rune('0'+l.calls)), Name: "run", Input: []byte(`{}`)},
			{ID: "b" + string(rune('0'+l.calls)), Name: "run", Input: []byte(`{}`)},
		}})
		for _, id := range []string{"a", "b"} {
			r := event.ToolResult{CallID: id + string(rune('0'+l.calls)), Name: "run", Output: lines(200, "dump")}
			l.add(l.cut(r))
		}
		l.calls++
	}
	a := l.assemble()
	if a.Occupancy.Action != ActionSqueeze || len(a.Occupancy.Dropped) == 0 {
		t.Fatalf("action %s dropped %v, want a squeeze", a.Occupancy.Action, a.Occupancy.Dropped)
	}
}

func TestCompactionIsAskedForPastTheSecondThreshold(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("write the parser")
	// Long answers, no tool output to drop: only compaction helps.
	var a Assembly
	for i := 0; !a.Compact; i++ {
		l.answer(lines(40, "design notes"))
		l.prompt("go on")
		a = l.assemble()
		if i > 30 {
			t.Fatal("compaction was never asked for")
		}
	}
	lim := l.w.Limits(l.spec)
	if a.Used() < lim.Compact {
		t.Fatalf("compaction asked for at %d tokens, under the threshold %d", a.Used(), lim.Compact)
	}
	plan, err := l.w.PlanCompaction(l.input())
	if err != nil || plan == nil {
		t.Fatalf("plan = %v, %v", plan, err)
	}
	// The summary replaces everything before the last three turns.
	starts := turnStarts(l.events[2:])
	keepFrom := l.events[2:][starts[len(starts)-3]].Seq
	if plan.Through != keepFrom-1 {
		t.Fatalf("through = %d, want %d (just before the last three turns)", plan.Through, keepFrom-1)
	}
	req := plan.Request(0)
	if !strings.HasPrefix(req.System[0].Text, SummaryMarker) || !strings.Contains(requestText(req), "write the parser") {
		t.Fatalf("summary request = %+v", req)
	}
	c := plan.Result([]string{`{"goal":"a parser","done":["tokenizer in lex.go"],"in_progress":["the AST"],"handles":["path lex.go"],"decisions":["hand-written, no yacc"]}`})
	l.add(c)
	b := l.assemble()
	if b.Compact || b.Used() >= lim.Drop {
		t.Fatalf("after compaction: %d tokens, compact=%v", b.Used(), b.Compact)
	}
	text := requestText(b.Request)
	for _, want := range []string{"Goal: a parser", "tokenizer in lex.go", "hand-written, no yacc", "write the parser"} {
		if !strings.Contains(text, want) {
			t.Errorf("after compaction the request lacks %q", want)
		}
	}
	// The last three turns: two prompts with their answers, and the last prompt.
	if n := strings.Count(text, "design notes line 0:"); n != 2 {
		t.Errorf("after compaction the request holds %d of the old answers, want the two in the last three turns", n)
	}
}

// Each stretch of original events is summarized once: a later compaction
// sends the summarizer only the originals after the last one's, never a
// summary, and composes its piece with the earlier ones.
func TestCompactionSummarisesEachStretchOnce(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("task")
	for range 8 {
		l.answer("first era " + lines(5, "alpha"))
		l.prompt("next")
	}
	plan, _ := l.w.PlanCompaction(l.input())
	first := plan.Result([]string{`{"goal":"g","done":["alpha parsed"],"handles":["path alpha.go"],"summary":"EARLIER-SUMMARY-TEXT"}`})
	l.add(first)
	for range 8 {
		l.answer("second era " + lines(5, "beta"))
		l.prompt("more")
	}
	plan, _ = l.w.PlanCompaction(l.input())
	var all string
	for k := range plan.Chunks() {
		all += requestText(plan.Request(k))
	}
	if strings.Contains(all, "EARLIER-SUMMARY-TEXT") || strings.Contains(all, "alpha parsed") {
		t.Fatal("the second compaction was fed the first summary")
	}
	if !strings.Contains(all, "second era") {
		t.Fatal("the second compaction does not see the new originals")
	}
	for _, m := range regexp.MustCompile(`\[#(\d+) `).FindAllStringSubmatch(all, -1) {
		if seq, _ := strconv.ParseInt(m[1], 10, 64); seq <= first.Through {
			t.Fatalf("the second compaction was sent event #%d, which the first already summarized (through #%d)", seq, first.Through)
		}
	}
	second := plan.Result([]string{`{"goal":"g2","done":["beta parsed"],"in_progress":["gamma"],"handles":["path beta.go"],"summary":"LATER"}`})
	if len(second.Pieces) != 1 || second.Pieces[0].From <= first.Through || second.Through != plan.Through {
		t.Fatalf("pieces %+v after a first compaction through %d", second.Pieces, first.Through)
	}
	for _, want := range []string{"alpha parsed", "beta parsed"} {
		if !slices.Contains(second.Done, want) {
			t.Errorf("the composed done list %v lacks %q", second.Done, want)
		}
	}
	if !slices.Contains(second.Handles, "path alpha.go") || !slices.Contains(second.Handles, "path beta.go") ||
		second.Goal != "g2" || !strings.Contains(second.Summary, "EARLIER-SUMMARY-TEXT") || !strings.Contains(second.Summary, "LATER") {
		t.Fatalf("composed %+v", second)
	}
}

func TestCompactionChunksWhatDoesNotFitTheSummarizer(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("task")
	for range 40 {
		l.answer(lines(30, "history"))
		l.prompt("next")
	}
	plan, err := l.w.PlanCompaction(l.input())
	if err != nil || plan == nil {
		t.Fatal(plan, err)
	}
	if plan.Chunks() < 3 {
		t.Fatalf("%d chunks for ~%d tokens of history in a 7,000-token budget", plan.Chunks(), plan.Tokens)
	}
	c := l.w.Counter(l.spec)
	for k := range plan.Chunks() {
		req := plan.Request(k)
		n := c.Count(requestText(req))
		if n+req.MaxTokens > small.Window {
			t.Fatalf("chunk %d: %d tokens + %d for the answer exceed the window", k, n, req.MaxTokens)
		}
		if len(req.Messages) != 1 {
			t.Fatalf("chunk %d carries %d messages: each chunk is summarized on its own", k, len(req.Messages))
		}
	}
}

func TestSummaryFieldsAreAlwaysFilled(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("Port the CLI to cobra")
	l.tool("run", `{"command":"go build ./..."}`, "ok", "art_7")
	l.add(event.AssistantMessage{Text: "edit", ToolCalls: []event.ToolCall{{ID: "e", Name: "edit_file", Input: []byte(`{"path":"cmd/root.go"}`)}}})
	l.add(event.ToolResult{CallID: "e", Name: "edit_file", Output: "ok"})
	for range 4 {
		l.answer("x")
		l.prompt("y")
	}
	plan, _ := l.w.PlanCompaction(l.input())
	for _, tt := range []struct{ name, answer, goal string }{
		{"json in a fence", "```json\n{\"goal\":\"cobra port\",\"done\":[\"root.go\"]}\n```", "cobra port"},
		{"sections", "Goal: cobra port\nDone:\n- root.go\nIn progress:\n- flags", "cobra port"},
		{"free text", "We ported things.", "Port the CLI to cobra"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := plan.Result([]string{tt.answer})
			if c.Goal != tt.goal || c.Through != plan.Through {
				t.Fatalf("goal %q through %d", c.Goal, c.Through)
			}
			for _, h := range []string{"command go build ./...", "artifact art_7 (output of run)", "path cmd/root.go"} {
				if !slices.Contains(c.Handles, h) {
					t.Errorf("handles %q lack %q", c.Handles, h)
				}
			}
		})
	}
	if c := plan.Result([]string{"Goal: g\nDone:\n- root.go\nIn progress:\n- flags"}); !slices.Equal(c.Done, []string{"root.go"}) || !slices.Equal(c.InProgress, []string{"flags"}) {
		t.Errorf("sections parsed as %+v", c)
	}
}

func TestCompactionFieldsJoinThePins(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.add(event.ConstraintPinned{Text: "no new dependencies", Source: "user"})
	l.prompt("task")
	l.add(event.Compaction{Through: 3, Goal: "g", Constraints: []string{"No new dependencies.", "keep the API stable"}, Decisions: []string{"use sqlite"}})
	got := PinsOf(l.events)
	want := Pins{Constraints: []string{"no new dependencies", "keep the API stable"}, Decisions: []string{"use sqlite"}}
	if !slices.Equal(got.Constraints, want.Constraints) || !slices.Equal(got.Decisions, want.Decisions) {
		t.Fatalf("pins = %+v, want %+v", got, want)
	}
}

func TestOneOutputCannotJumpBothThresholds(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	lim := l.w.Limits(l.spec)
	l.prompt("read the log")
	before := l.assemble().Used()
	e := l.tool("run", `{"command":"cat big.log"}`, lines(2_000, "log"), "art_big")
	r := e.Payload.(event.ToolResult)
	if e.Tokens > lim.PerOutput+2*partOverhead {
		t.Fatalf("the cut output takes %d tokens, above the per-output cap %d", e.Tokens, lim.PerOutput)
	}
	if r.Lines != 2_000 || !strings.Contains(r.Output, "cut here to fit the context window; read_artifact art_big") ||
		!strings.HasPrefix(r.Output, "log line 0:") || !strings.Contains(r.Output, "log line 1999:") {
		t.Fatalf("cut output keeps no head, tail or way back: %d lines\n%.300s", r.Lines, r.Output)
	}
	after := l.assemble().Used()
	if before < lim.Drop && after >= lim.Compact {
		t.Fatalf("one output carried the window from %d past both thresholds to %d", before, after)
	}

	// An output stored uncut (an older log, a model with a larger window)
	// is cut again before assembly.
	l2 := newLog(t, config.Context{}, small)
	l2.prompt("read")
	l2.add(event.AssistantMessage{ToolCalls: []event.ToolCall{{ID: "x", Name: "run", Input: []byte(`{}`)}}})
	l2.add(event.ToolResult{CallID: "x", Name: "run", Output: lines(2_000, "raw")})
	a := l2.assemble()
	if a.Occupancy.ToolOutputs > lim.PerOutput+2*partOverhead || !strings.Contains(requestText(a.Request), "cut here to fit") {
		t.Fatalf("uncut stored output assembled at %d tokens", a.Occupancy.ToolOutputs)
	}
}

func TestEstimatesAreCorrectedByReportedUsage(t *testing.T) {
	est := config.ModelSpec{Window: 100_000, MaxOutput: 4_000, Tokenizer: "claude"}
	l := newLog(t, config.Context{}, est)
	l.prompt("hello there")
	a := l.assemble()
	if a.Occupancy.Counter != "estimate" || a.Occupancy.Ratio != 1 {
		t.Fatalf("first call: counter %s ratio %v", a.Occupancy.Counter, a.Occupancy.Ratio)
	}
	// The provider says the request was 30 % bigger than estimated.
	reported := int(math.Round(float64(a.Occupancy.Raw) * 1.3))
	l.add(event.AssistantMessage{Text: "hi", Usage: event.Usage{InputTokens: reported - 100, CacheReadTokens: 100}})
	l.prompt("again")
	b := l.assemble()
	if b.Occupancy.Ratio < 1.29 || b.Occupancy.Ratio > 1.31 {
		t.Fatalf("ratio = %v, want 1.3", b.Occupancy.Ratio)
	}
	if want := int(float64(b.Occupancy.Raw) * b.Occupancy.Ratio); b.Used() < want {
		t.Fatalf("used %d, want the raw %d corrected to at least %d", b.Used(), b.Occupancy.Raw, want)
	}

	// Exact counters are not corrected.
	x := newLog(t, config.Context{}, small)
	x.prompt("hello")
	xa := x.assemble()
	x.add(event.AssistantMessage{Text: "hi", Usage: event.Usage{InputTokens: xa.Occupancy.Raw * 2}})
	x.prompt("again")
	if r := x.assemble().Occupancy.Ratio; r != 1 {
		t.Fatalf("exact counter corrected by %v", r)
	}
}

func TestCountEventCountsWhatTheModelSees(t *testing.T) {
	w, _ := New(config.Context{}, func(spec string) config.ModelSpec {
		if spec == "openai/gpt-4.1" {
			return config.ModelSpec{Window: 1_000_000, MaxOutput: 32_000, Tokenizer: "o200k_base"}
		}
		return config.ModelSpec{Window: 200_000, MaxOutput: 64_000, Tokenizer: "claude"}
	})
	msg := event.UserMessage{Content: []event.Content{{Type: "text", Text: "hello world"}}}
	b, _ := event.Encode(msg)
	if n := w.CountEvent("openai/gpt-4.1", msg.Kind(), b); n != 2+partOverhead {
		t.Errorf("o200k count = %d, want 2 tokens of text + %d", n, partOverhead)
	}
	if n := w.CountEvent("anthropic/claude-sonnet-4-5", msg.Kind(), b); n < 2+partOverhead || n > 4+partOverhead {
		t.Errorf("estimated count = %d", n)
	}
	for _, p := range []event.Payload{event.ToolStarted{CallID: "x"}, event.ContextAssembled{Window: 1}, event.TurnFinished{StopReason: "end_turn"}} {
		b, _ := event.Encode(p)
		if n := w.CountEvent("openai/gpt-4.1", p.Kind(), b); n != 0 {
			t.Errorf("%s counts %d; the model never sees it", p.Kind(), n)
		}
	}
}

func TestPrefixHashChangesOnlyWithTheStableBlocks(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("task")
	h1 := l.assemble().Occupancy.PrefixHash
	l.tool("run", `{}`, "out", "")
	h2 := l.assemble().Occupancy.PrefixHash
	l.add(event.DecisionRecorded{Text: "use sqlite", Source: "user"})
	h3 := l.assemble().Occupancy.PrefixHash
	if h1 != h2 || h2 == h3 || len(h1) != 16 {
		t.Fatalf("hashes %s %s %s: want the same until a pin is added", h1, h2, h3)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []config.Context{
		{Drop: 0.9, Compact: 0.8},
		{Drop: 0.7, Compact: 1.2},
		{LowWater: 0.8},
		{KeepTurns: -1},
		{Reserve: -5},
	} {
		if _, err := New(c, nil); err == nil {
			t.Errorf("New(%+v) accepted", c)
		} else if !strings.Contains(err.Error(), "context window:") {
			t.Errorf("error %q does not say where", err)
		}
	}
	if _, err := New(config.Context{Drop: 0.5, Compact: 0.8}, nil); err != nil {
		t.Errorf("custom thresholds refused: %v", err)
	}
}

func TestMarkersMatchTheScriptedModel(t *testing.T) {
	if SummaryMarker != scripted.SummaryRequest || ReminderPrefix != scripted.ReminderPrefix {
		t.Fatal("contextwin and provider/scripted disagree on the summary marker or the reminder prefix")
	}
}

// BenchmarkAssemble measures one assembly (the harness's overhead on every
// model call) over logs of 1k and 10k events: from scratch (no Memo: the
// whole log read), and as the session assembles, with the session's Memo
// after one more tool call and its result.
func BenchmarkAssemble(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		build := func() *sessionLog {
			l := newLog(&testing.T{}, config.Context{}, config.ModelSpec{Window: 1_000_000, MaxOutput: 32_000, Tokenizer: "o200k_base"})
			l.prompt("benchmark task")
			out := lines(20, "out")
			for len(l.events) < n {
				l.tool("run", `{"command":"ls"}`, out, "")
				if len(l.events)%400 == 0 {
					l.assemble()
				}
			}
			return l
		}
		b.Run(fmt.Sprintf("events=%d/scratch", n), func(b *testing.B) {
			l := build()
			in := l.input()
			b.ResetTimer()
			for b.Loop() {
				if _, err := l.w.Assemble(in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("events=%d/memo", n), func(b *testing.B) {
			l := build()
			var memo Memo
			in := l.input()
			in.Memo = &memo
			if _, err := l.w.Assemble(in); err != nil {
				b.Fatal(err)
			}
			out := lines(20, "out")
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				l.tool("run", `{"command":"ls"}`, out, "")
				in := l.input()
				in.Memo = &memo
				b.StartTimer()
				a, err := l.w.Assemble(in)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				l.add(a.Occupancy)
				b.StartTimer()
			}
		})
	}
}

func TestAddressesNameTheirOwnCallWhenIdsRepeat(t *testing.T) {
	// Some models number calls per message, so ids repeat across messages;
	// an address must still describe its own call, or it would change
	// from call to call and break the prompt cache.
	l := newLog(t, config.Context{}, small)
	l.prompt("go")
	for i := range 8 {
		l.add(event.AssistantMessage{ToolCalls: []event.ToolCall{{ID: "toolu_0", Name: "run", Input: []byte(fmt.Sprintf(`{"command":"step %d"}`, i))}}})
		l.add(event.ToolResult{CallID: "toolu_0", Name: "run", Output: lines(60, fmt.Sprintf("s%d", i))})
	}
	a := l.assemble()
	if a.Occupancy.Action != ActionDrop {
		t.Fatalf("action %s", a.Occupancy.Action)
	}
	text := requestText(a.Request)
	if !strings.Contains(text, "[output of `run {\"command\":\"step 0\"}`") || !strings.Contains(text, "[output of `run {\"command\":\"step 1\"}`") {
		t.Fatalf("addresses do not name their calls:\n%s", text)
	}
}

// TestChangedFilesAreNotedAndTheirOutputsDropFirst: a file the model read
// changed on disk; the request says so, and the output showing the old
// content is the first to go when the window fills.
func TestChangedFilesAreNotedAndTheirOutputsDropFirst(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("read the package")
	var results []event.Event
	read := func(i int) event.Event {
		l.calls++
		id := fmt.Sprintf("call_%d", l.calls)
		path := fmt.Sprintf("/w/src/f%d.go", i)
		l.add(event.AssistantMessage{Text: "reading", ToolCalls: []event.ToolCall{{ID: id, Name: "read_file", Input: json.RawMessage(fmt.Sprintf(`{"path":"src/f%d.go"}`, i))}}})
		return l.add(event.ToolResult{CallID: id, Name: "read_file", Output: lines(25, "line"), Status: "completed",
			Locations: []string{path}, Seen: []event.FileSeen{{Path: path, Version: "1:1:1"}}})
	}
	results = append(results, read(0), read(1), read(2))
	l.assemble()
	l.add(event.FileChanged{Path: "/w/src/f2.go", Shown: "src/f2.go", Turn: 1, Version: "2:2:1"})
	a := l.assemble()
	note := "src/f2.go changed on disk after you read it at turn 1"
	if !strings.Contains(requestText(a.Request), note) {
		t.Fatalf("the request lacks the note %q", note)
	}
	for i := 3; a.Occupancy.Action != ActionDrop; i++ {
		results = append(results, read(i))
		a = l.assemble()
		if i > 20 {
			t.Fatal("never dropped")
		}
	}
	if len(a.Occupancy.Dropped) == 0 || a.Occupancy.Dropped[0] != results[2].Seq {
		t.Fatalf("dropped %v: want the stale read of f2.go (seq %d) first, then the oldest", a.Occupancy.Dropped, results[2].Seq)
	}
	if len(a.Occupancy.Dropped) > 1 && a.Occupancy.Dropped[1] != results[0].Seq {
		t.Fatalf("dropped %v: after the stale output, the oldest (seq %d)", a.Occupancy.Dropped, results[0].Seq)
	}
}

// The current plan ends every request, in place of earlier ones, also
// after a compaction summarized the call that set it; it counts in the
// task-and-pins share, and a cleared plan leaves the tail.
func TestThePlanEndsEveryRequest(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("fix the bug")
	l.add(event.PlanUpdated{Entries: []event.PlanEntry{{Content: "read", Status: "in_progress"}, {Content: "fix", Status: "pending"}}})
	l.add(event.PlanUpdated{Entries: []event.PlanEntry{{Content: "read", Status: "completed"}, {Content: "fix", Status: "in_progress"}}})
	l.answer("on it")
	l.add(event.Compaction{Through: int64(len(l.events)), Goal: "fix the bug"})
	l.prompt("go on")
	tail := func(a Assembly) string {
		last := a.Request.Messages[len(a.Request.Messages)-1]
		return last.Parts[len(last.Parts)-1].Text
	}
	a := l.assemble()
	if want := ReminderPrefix + "the current plan; update it with the plan tool as steps start and finish:\n[x] read\n[>] fix)"; tail(a) != want {
		t.Fatalf("the request ends %q, want %q", tail(a), want)
	}
	for _, m := range a.Request.Messages {
		for _, p := range m.Parts {
			if strings.Contains(p.Text, "[ ] fix") {
				t.Fatalf("an older plan is still in the request: %q", p.Text)
			}
		}
	}
	withPlan := a.Occupancy.TaskPins
	l.add(event.PlanUpdated{})
	a = l.assemble()
	if strings.Contains(tail(a), "current plan") || a.Occupancy.TaskPins >= withPlan {
		t.Fatalf("a cleared plan still ends the request (%q) or counts (%d ≥ %d)", tail(a), a.Occupancy.TaskPins, withPlan)
	}
}

// With counts the provider finds bigger than the estimate, one output is
// cut so that its corrected count fits the per-output cap: when it is
// recorded (with the ratio known then) and again at assembly (the ratio
// grew since).
func TestOneOutputFitsItsCapAsTheProviderCounts(t *testing.T) {
	est := config.ModelSpec{Window: 20_000, MaxOutput: 2_000, Tokenizer: "claude"}
	l := newLog(t, config.Context{}, est)
	lim := l.w.Limits(l.spec)
	l.prompt("read the log")
	a := l.assemble()
	l.add(event.AssistantMessage{Text: "ok", Usage: event.Usage{InputTokens: a.Occupancy.Raw * 3 / 2}})
	l.prompt("and the big one")
	b := l.assemble()
	if b.Occupancy.Ratio < 1.45 {
		t.Fatalf("ratio %v, want about 1.5", b.Occupancy.Ratio)
	}
	e := l.tool("run", `{"command":"cat big.log"}`, lines(3_000, "log"), "art_big")
	if got := float64(e.Tokens) * b.Occupancy.Ratio; got > float64(lim.PerOutput+3*partOverhead) {
		t.Fatalf("the output was recorded at %d raw tokens, %.0f as the provider counts: over the cap %d", e.Tokens, got, lim.PerOutput)
	}
	// The provider counts bigger still: the stored output is cut again.
	c := l.assemble()
	l.add(event.AssistantMessage{Text: "ok", Usage: event.Usage{InputTokens: c.Occupancy.Raw * 2}})
	l.prompt("go on")
	d := l.assemble()
	if d.Occupancy.Ratio <= b.Occupancy.Ratio {
		t.Fatalf("ratio did not grow: %v", d.Occupancy.Ratio)
	}
	if d.Occupancy.ToolOutputs > lim.PerOutput+3*partOverhead {
		t.Fatalf("at ratio %.2f the output takes %d corrected tokens, over the cap %d", d.Occupancy.Ratio, d.Occupancy.ToolOutputs, lim.PerOutput)
	}
}

// The count correction moves a little on every reported usage; the
// per-output cap does not follow each move, or the Memo would project the
// whole window again on every model call (and an output already shown
// could be clipped anew, changing the request's cached prefix).
func TestTheWindowIsNotProjectedAgainAsTheRatioDrifts(t *testing.T) {
	est := config.ModelSpec{Window: 20_000, MaxOutput: 2_000, Tokenizer: "claude"}
	l := newLog(t, config.Context{}, est)
	l.prompt("read the log")
	a := l.assemble()
	l.add(event.AssistantMessage{Text: "ok", Usage: event.Usage{InputTokens: int(math.Round(float64(a.Occupancy.Raw) * 1.31))}})
	l.prompt("and the big one")
	l.assemble()
	l.tool("run", `{"command":"cat big.log"}`, lines(3_000, "log"), "art_big")
	b := l.assemble()
	view := l.memo.view
	l.add(event.AssistantMessage{Text: "ok", Usage: event.Usage{InputTokens: int(math.Round(float64(b.Occupancy.Raw) * 1.34))}})
	l.prompt("go on")
	c := l.assemble()
	if b.Occupancy.Ratio == c.Occupancy.Ratio {
		t.Fatalf("the ratio did not move (%v): the test needs a drift", b.Occupancy.Ratio)
	}
	if l.memo.view != view {
		t.Fatalf("the window was projected again when the ratio went from %.3f to %.3f", b.Occupancy.Ratio, c.Occupancy.Ratio)
	}
	if requestText(c.Request)[:len(requestText(b.Request))-200] != requestText(b.Request)[:len(requestText(b.Request))-200] {
		t.Fatal("the request's prefix changed with the ratio")
	}
	for _, r := range []float64{1.001, 1.3, 1.31, 1.349, 2.99, 3} {
		if per := rawPerOutput(10_000, r, false); float64(per)*r > 10_000 {
			t.Errorf("at ratio %v the cap is %d raw tokens, %.0f corrected: over 10000", r, per, float64(per)*r)
		}
		if per := rawPerOutput(10_000, r, true); float64(per)*r*estimateSlack > 10_000 {
			t.Errorf("at ratio %v an estimated cap is %d raw tokens, %.0f with the slack: over 10000", r, per, float64(per)*r*estimateSlack)
		}
	}
}

// A dropped output is shown to the summarizer cut short; one without an
// artifact says the id read_artifact returns it by, so the summary can
// keep the way back once the compaction takes the address out of the
// window.
func TestTheSummarizerIsToldTheWayBackToACutOutput(t *testing.T) {
	l := newLog(t, config.Context{}, small)
	l.prompt("task")
	r := l.tool("read_file", `{"path":"notes.txt"}`, lines(200, "note"), "")
	a := l.tool("run", `{"command":"make"}`, lines(200, "build"), "a9.0")
	l.add(event.ContextAssembled{Dropped: []int64{r.Seq, a.Seq}})
	for range 8 {
		l.answer("work " + lines(5, "w"))
		l.prompt("next")
	}
	plan, _ := l.w.PlanCompaction(l.input())
	if plan == nil {
		t.Fatal("no compaction planned")
	}
	var all string
	for k := range plan.Chunks() {
		all += requestText(plan.Request(k))
	}
	if !strings.Contains(all, fmt.Sprintf("whole as read_artifact %s]", ResultID(r.Seq))) {
		t.Fatalf("the cut read_file output does not name r%d:\n%s", r.Seq, all)
	}
	if !strings.Contains(all, "artifact a9.0]") || strings.Contains(all, ResultID(a.Seq)+"]") {
		t.Fatalf("the cut output with an artifact should name the artifact alone:\n%s", all)
	}
}
