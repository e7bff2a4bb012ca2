package ctxbench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/session"
	"github.com/bridle-dev/bridle/store"
	"github.com/bridle-dev/bridle/tools"
)

// profile is a model the benchmark plays: its window and whether bridle
// counts its tokens exactly or estimates them. The simulated model itself
// always tokenizes with o200k_base, so estimated sessions measure the
// estimate against the exact count.
type profile struct {
	name  string
	model config.ModelSpec
}

var profiles = []profile{
	{"bench/exact-32k", config.ModelSpec{Window: 32_768, MaxOutput: 8_192, Tokenizer: "o200k_base"}},
	{"bench/estimate-64k", config.ModelSpec{Window: 65_536, MaxOutput: 8_192, Tokenizer: "claude"}},
	{"bench/exact-128k", config.ModelSpec{Window: 128_000, MaxOutput: 16_384, Tokenizer: "o200k_base"}},
	{"bench/estimate-200k", config.ModelSpec{Window: 200_000, MaxOutput: 32_000, Tokenizer: "claude"}},
}

// Options configure a run.
type Options struct {
	Sessions int
	Seed     uint64
	// MaxIterations bounds model calls per session (at least 40).
	MaxIterations int
	// Dir holds the SQLite file.
	Dir string
	// Workers run sessions in parallel.
	Workers int
}

// plan is one randomized session.
type plan struct {
	profile profile
	first   string
	turns   []turnPlan
	calls   int
}

type turnPlan struct {
	pins   []string // slash commands sent before the prompt
	prompt string   // "" for the first turn, whose prompt is plan.first
	calls  []callPlan
}

type callPlan struct {
	text string
	// out is the emit tool's output size in tokens; 0 for a final answer.
	out  int
	seed uint64
}

func newPlan(seed uint64, maxIter int) plan {
	r := rand.New(rand.NewPCG(seed, 7))
	p := plan{profile: profiles[r.IntN(len(profiles))]}
	p.first = fmt.Sprintf("FIRST-REQUEST-%d: %s", seed, prose(r, 80+r.IntN(300)))
	target := 40 + r.IntN(max(1, maxIter-40+1))
	pins := 0
	for len(p.turns) == 0 || p.calls < target {
		t := turnPlan{}
		if len(p.turns) > 0 {
			t.prompt = fmt.Sprintf("Task %d of session %d: %s", len(p.turns), seed, prose(r, 20+r.IntN(80)))
		}
		// Constraints and decisions arrive at random turns.
		for r.IntN(4) == 0 {
			pins++
			if r.IntN(2) == 0 {
				t.pins = append(t.pins, fmt.Sprintf("/constraint never change %s without a test (C%d-%d)", words[r.IntN(len(words))], seed, pins))
			} else {
				t.pins = append(t.pins, fmt.Sprintf("/decision use the %s approach for %s (D%d-%d)", words[r.IntN(len(words))], words[r.IntN(len(words))], seed, pins))
			}
		}
		k := 1 + r.IntN(12)
		for range k {
			if p.calls >= target-1 {
				break
			}
			// Tool outputs from 10 to 80,000 tokens, log-uniform: most are
			// small, a few are enormous.
			size := int(math.Exp(math.Log(10) + r.Float64()*(math.Log(80_000)-math.Log(10))))
			t.calls = append(t.calls, callPlan{text: prose(r, 15+r.IntN(250)), out: size, seed: r.Uint64()})
			p.calls++
		}
		t.calls = append(t.calls, callPlan{text: prose(r, 30+r.IntN(300))})
		p.calls++
		p.turns = append(p.turns, t)
	}
	return p
}

// scenario is the plan as a sequential scripted scenario.
func (p plan) scenario() *scripted.Scenario {
	sc := &scripted.Scenario{Name: "ctxbench", Sequential: true}
	for _, t := range p.turns {
		var st scripted.Turn
		for _, c := range t.calls {
			call := scripted.Call{Text: scripted.Chunks{c.text}}
			if c.out > 0 {
				in, _ := json.Marshal(emitInput{Tokens: c.out, Seed: c.seed})
				call.ToolCalls = []scripted.ToolCall{{Name: "emit", Input: in}}
			}
			st.Calls = append(st.Calls, call)
		}
		sc.Turns = append(sc.Turns, st)
	}
	for i := range 400 {
		sc.Summaries = append(sc.Summaries, scripted.Call{Text: scripted.Chunks{fmt.Sprintf(
			`{"goal":"finish the tasks of this session","done":["step %d of the survey"],"in_progress":["the next task"],"handles":["path store/write.go"],"summary":"compaction %d"}`, i, i)}})
	}
	return sc
}

// capShare is the per-output cap, as a share of the input budget: the gap
// between the default drop and compact thresholds.
const capShare = 0.2

// emit is the benchmark's tool: it prints a deterministic output of about
// the asked number of tokens, like a test run or a log dump would.
type emit struct{ pool *pool }

type emitInput struct {
	Tokens int    `json:"tokens"`
	Seed   uint64 `json:"seed"`
}

func (emit) Name() string        { return "emit" }
func (emit) Description() string { return "Print output of a given size (benchmark tool)." }
func (emit) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"tokens":{"type":"integer"},"seed":{"type":"integer"}}}`)
}
func (emit) Kind() tools.Kind          { return tools.KindRead }
func (emit) Effect() permission.Effect { return permission.EffectRead }
func (emit) Preview(context.Context, *tools.Env, json.RawMessage) (tools.Preview, error) {
	return tools.Preview{Title: "emit"}, nil
}

func (e emit) Run(_ context.Context, env *tools.Env, input json.RawMessage) tools.Result {
	var in emitInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tools.Errorf("emit: %v", err)
	}
	// A third of the outputs are of one kind of line (a log, a file of
	// code, JSON), as a real file is: an estimate's error on them is not
	// the session's average.
	kind := -1
	if in.Seed%3 == 0 {
		kind = int(in.Seed / 3 % kinds)
	}
	out, _ := e.pool.textOf(rand.New(rand.NewPCG(in.Seed, 1)), in.Tokens, kind)
	if in.Seed%2 == 1 {
		// Half the outputs are a file's, as read_file returns them: no
		// artifact, the log keeps them (read_artifact r<seq>).
		return tools.Result{Output: out}
	}
	// Keys are session/seq/index; the artifact is named after the call.
	k := strings.Split(env.Key, "/")
	return tools.Result{Output: out, Artifact: "art_" + strings.Join(k[max(0, len(k)-2):], "_")}
}

// Result is what one run measured.
type Result struct {
	Sessions, Requests, SummaryRequests int
	Compactions, DropBatches, Squeezes  int
	Overflows                           int
	// Complete counts requests holding the first request verbatim and
	// every constraint and decision given so far.
	Complete int
	// StablePairs counts consecutive requests of a session whose bytes
	// agree up to the last stable block; Pairs all consecutive pairs.
	StablePairs, Pairs int
	// Tokens sent to the model, exactly counted, and the part of them
	// that repeated the previous request from its start (cache-eligible).
	Tokens, SummaryTokens, CachedTokens int64
	// CallsPerCompaction is each compaction's summarizer calls.
	CallsPerCompaction []int
	Naive              naiveResult
	// Count errors, (counted − exact)/exact per request.
	RawErrEstimate, ErrEstimate, ErrExact []float64
	// Outputs counts the tool outputs the requests showed; OutputShares
	// is each one's largest exact share of the input budget. Shortened
	// were dropped to an address or cut, NoAddress of them named no id
	// read_artifact returns the rest by, CutAfterWhole were shortened
	// after a request had shown them whole.
	Outputs, Shortened, NoAddress, CutAfterWhole int
	OutputShares                                 []float64
}

// Run plays o.Sessions randomized sessions and returns the measures.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.MaxIterations < 40 {
		o.MaxIterations = 150
	}
	st, err := store.Open(ctx, filepath.Join(o.Dir, "ctxbench.db"))
	if err != nil {
		return Result{}, err
	}
	defer st.Close()
	pool := newPool(4_000)
	models := map[string]config.ModelSpec{}
	for _, p := range profiles {
		models[p.name] = p.model
	}
	win, err := contextwin.New(contextwin.DefaultConfig, func(spec string) config.ModelSpec { return models[spec] })
	if err != nil {
		return Result{}, err
	}
	var (
		mu    sync.Mutex
		total Result
		first error
		wg    sync.WaitGroup
	)
	jobs := make(chan int)
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := newTruth(pool)
			for i := range jobs {
				p := newPlan(o.Seed*1_000_003+uint64(i), o.MaxIterations)
				res, err := runSession(ctx, st, win, pool, tr, p, o.Dir)
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("session %d (%s): %w", i, p.profile.name, err)
				}
				total.add(res)
				mu.Unlock()
			}
		}()
	}
	for i := range o.Sessions {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return total, first
}

func (r *Result) add(o Result) {
	r.Sessions += o.Sessions
	r.Requests += o.Requests
	r.SummaryRequests += o.SummaryRequests
	r.Compactions += o.Compactions
	r.DropBatches += o.DropBatches
	r.Squeezes += o.Squeezes
	r.Overflows += o.Overflows
	r.Complete += o.Complete
	r.StablePairs += o.StablePairs
	r.Pairs += o.Pairs
	r.Tokens += o.Tokens
	r.SummaryTokens += o.SummaryTokens
	r.CachedTokens += o.CachedTokens
	r.CallsPerCompaction = append(r.CallsPerCompaction, o.CallsPerCompaction...)
	r.Naive.add(o.Naive)
	r.RawErrEstimate = append(r.RawErrEstimate, o.RawErrEstimate...)
	r.ErrEstimate = append(r.ErrEstimate, o.ErrEstimate...)
	r.ErrExact = append(r.ErrExact, o.ErrExact...)
	r.Outputs += o.Outputs
	r.Shortened += o.Shortened
	r.NoAddress += o.NoAddress
	r.CutAfterWhole += o.CutAfterWhole
	r.OutputShares = append(r.OutputShares, o.OutputShares...)
}

// OverCap counts the outputs that took more than share of the input
// budget, and returns the largest share.
func (r Result) OverCap(share float64) (n int, most float64) {
	for _, s := range r.OutputShares {
		if s > share {
			n++
		}
		most = max(most, s)
	}
	return n, most
}

func runSession(ctx context.Context, st *store.Store, win *contextwin.Window, pool *pool, tr *truth, p plan, dir string) (Result, error) {
	obs := &observer{inner: scripted.New(p.scenario()), truth: tr, window: p.profile.model.Window,
		input: win.Limits(p.profile.name).Input, first: p.first}
	mgr := session.NewManager(session.Config{
		Store:         st,
		Client:        quiet{},
		OpenModel:     obs.open,
		DefaultModel:  func(string) string { return p.profile.name },
		Tools:         []tools.Tool{emit{pool: pool}},
		Window:        win,
		MaxIterations: 1_000,
		// Artifacts are kept there, as bridle keeps them in its data
		// directory: an output cut with no artifact of its own is kept
		// whole as one.
		DataDir: dir,
	})
	info, err := mgr.New(ctx, session.NewParams{Cwd: dir})
	if err != nil {
		return Result{}, err
	}
	s, err := mgr.Get(ctx, info.ID)
	if err != nil {
		return Result{}, err
	}
	defer mgr.Close(ctx, info.ID)
	prompt := func(text string) error {
		stop, err := s.Prompt(ctx, []event.Content{{Type: "text", Text: text}})
		if err != nil {
			return err
		}
		if stop != session.StopEndTurn {
			return fmt.Errorf("turn ended with %s", stop)
		}
		return nil
	}
	for i, t := range p.turns {
		for _, pin := range t.pins {
			if err := prompt(pin); err != nil {
				return Result{}, err
			}
			_, text, _ := strings.Cut(pin, " ")
			obs.pin(text)
		}
		text := t.prompt
		if i == 0 {
			text = p.first
		}
		if err := prompt(text); err != nil {
			return Result{}, err
		}
	}
	res := obs.result()
	res.Sessions = 1
	// Pair each context_assembled with the exact size of the request it
	// described.
	k := 0
	log, err := s.Log(ctx)
	if err != nil {
		return res, err
	}
	for _, e := range log {
		c, ok := e.Payload.(event.ContextAssembled)
		if !ok {
			continue
		}
		switch c.Action {
		case contextwin.ActionCompact:
			res.Compactions++
		case contextwin.ActionDrop:
			res.DropBatches++
		case contextwin.ActionSqueeze:
			res.Squeezes++
		}
		if k >= len(obs.sizes) {
			return res, fmt.Errorf("more context_assembled events than requests")
		}
		exact := float64(obs.sizes[k])
		k++
		if c.Counter == "estimate" {
			res.RawErrEstimate = append(res.RawErrEstimate, (float64(c.Raw)-exact)/exact)
			res.ErrEstimate = append(res.ErrEstimate, (float64(c.Used())-exact)/exact)
		} else {
			res.ErrExact = append(res.ErrExact, (float64(c.Used())-exact)/exact)
		}
	}
	res.Naive = naive(p, pool, tr, obs.fixed)
	return res, nil
}

// quiet is an editor that listens to nothing.
type quiet struct{}

func (quiet) Update(context.Context, string, acp.SessionUpdate) error { return nil }
func (quiet) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.SelectedPermissionOutcome{OptionID: "allow_once"}}}, nil
}

// Under returns the worst undercount, in percent (0 if none): the error
// that could overflow a window, where an overcount only wastes room.
func Under(errs []float64) float64 {
	worst := 0.0
	for _, e := range errs {
		worst = min(worst, e)
	}
	if worst == 0 {
		return 0
	}
	return -100 * worst
}

// Summary returns percentiles of absolute errors, in percent.
func Summary(errs []float64) (mean, p95, worst float64) {
	if len(errs) == 0 {
		return 0, 0, 0
	}
	abs := make([]float64, len(errs))
	for i, e := range errs {
		abs[i] = 100 * math.Abs(e)
		mean += abs[i]
	}
	sort.Float64s(abs)
	return mean / float64(len(abs)), abs[int(0.95*float64(len(abs)-1))], abs[len(abs)-1]
}

// Report writes the run's figures.
func (r Result) Report(seed uint64) string {
	var b strings.Builder
	pct := func(a, n int) float64 {
		if n == 0 {
			return 0
		}
		return 100 * float64(a) / float64(n)
	}
	fmt.Fprintf(&b, "context window fidelity: %d sessions (seed %d), %d model requests, %d summarizer requests\n", r.Sessions, seed, r.Requests, r.SummaryRequests)
	fmt.Fprintf(&b, "  overflows (request + answer slack > window):        %d\n", r.Overflows)
	fmt.Fprintf(&b, "  requests with the first request and every pin:       %.2f %% (%d/%d)\n", pct(r.Complete, r.Requests), r.Complete, r.Requests)
	fmt.Fprintf(&b, "  compactions: %d   drop batches: %d   squeezes: %d\n", r.Compactions, r.DropBatches, r.Squeezes)
	fmt.Fprintf(&b, "  consecutive requests sharing the stable prefix:      %.2f %% (%d/%d)\n", pct(r.StablePairs, r.Pairs), r.StablePairs, r.Pairs)
	total := r.Tokens + r.SummaryTokens
	fmt.Fprintf(&b, "  tokens sent: bridle %d (%d agent + %d summarizer) vs naive %d: %.1f %% of naive\n",
		total, r.Tokens, r.SummaryTokens, r.Naive.Tokens, 100*float64(total)/float64(max(1, r.Naive.Tokens)))
	calls, most := 0, 0
	for _, n := range r.CallsPerCompaction {
		calls, most = calls+n, max(most, n)
	}
	fmt.Fprintf(&b, "  summarizer: %.1f %% of the agent's tokens; calls per compaction: mean %.2f, max %d (%d compactions)\n",
		100*float64(r.SummaryTokens)/float64(max(1, r.Tokens)), float64(calls)/float64(max(1, len(r.CallsPerCompaction))), most, len(r.CallsPerCompaction))
	fmt.Fprintf(&b, "  tokens repeating the previous request from its start (cache-eligible): bridle %.1f %%, naive %.1f %%\n",
		100*float64(r.CachedTokens)/float64(max(1, r.Tokens)), 100*float64(r.Naive.CachedTokens)/float64(max(1, r.Naive.Tokens)))
	fmt.Fprintf(&b, "  naive keep-until-full/drop-oldest: overflows %d, first request and every pin in %.2f %%, stable prefix %.2f %%\n",
		r.Naive.Overflows, pct(r.Naive.Complete, r.Naive.Requests), pct(r.Naive.StablePairs, r.Naive.Pairs))
	over, largest := r.OverCap(capShare)
	fmt.Fprintf(&b, "  tool outputs shown: %d; over %.0f %% of the input budget: %d (largest %.1f %%)\n", r.Outputs, 100*capShare, over, 100*largest)
	fmt.Fprintf(&b, "  dropped or cut: %d, of which without a read_artifact id: %d; cut after they were shown whole: %d\n", r.Shortened, r.NoAddress, r.CutAfterWhole)
	m, p, w := Summary(r.RawErrEstimate)
	fmt.Fprintf(&b, "  token count vs exact o200k, estimated sessions, raw:       mean %.1f %%, p95 %.1f %%, max %.1f %% (%d requests)\n", m, p, w, len(r.RawErrEstimate))
	m, p, w = Summary(r.ErrEstimate)
	fmt.Fprintf(&b, "  token count vs exact o200k, estimated sessions, corrected: mean %.1f %%, p95 %.1f %%, max %.1f %%, worst undercount %.1f %%\n", m, p, w, Under(r.ErrEstimate))
	m, p, w = Summary(r.ErrExact)
	fmt.Fprintf(&b, "  token count vs exact o200k, exact sessions:                mean %.2f %%, p95 %.2f %%, max %.2f %%, worst undercount %.2f %% (%d requests)\n", m, p, w, Under(r.ErrExact), len(r.ErrExact))
	return b.String()
}
