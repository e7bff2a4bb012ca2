package ctxbench

import (
	"context"
	"flag"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/tokens"
)

// `make bench-context` runs 200 sessions; the default suite runs a few, so
// every `make test` checks the same must-haves on fresh random sessions.
var (
	sessions = flag.Int("sessions", 4, "randomized sessions to play")
	seed     = flag.Uint64("seed", 1, "seed of the randomized sessions")
	maxIter  = flag.Int("max-iterations", 80, "most model calls in one session")
)

func TestFidelity(t *testing.T) {
	dir := t.TempDir()
	// fsync dominates a SQLite append on disk; the figures are about the
	// window, so keep the log in memory-backed storage when there is one.
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "ctxbench-"); err == nil {
			dir = d
			t.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	res, err := Run(context.Background(), Options{Sessions: *sessions, Seed: *seed, MaxIterations: *maxIter, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Report(*seed))
	if res.Overflows != 0 {
		t.Errorf("%d requests overflowed the window", res.Overflows)
	}
	if res.Complete != res.Requests {
		t.Errorf("%d of %d requests lacked the first request or a pin", res.Requests-res.Complete, res.Requests)
	}
	if res.Naive.Requests != res.Requests {
		t.Errorf("the naive harness made %d requests, bridle %d: they must play the same sessions", res.Naive.Requests, res.Requests)
	}
	if *sessions >= 4 && (res.Compactions == 0 || res.DropBatches == 0) {
		t.Errorf("%d compactions and %d drop batches in %d long sessions: the thresholds never acted", res.Compactions, res.DropBatches, res.Sessions)
	}
	// One output never takes more than the gap between the thresholds,
	// as the model counts it, estimated sessions too; and every output
	// dropped or cut says how to get the rest exactly as it was.
	if over, largest := res.OverCap(capShare); over > 0 {
		t.Errorf("%d outputs took more than %.0f %% of the input budget (largest %.1f %%)", over, 100*capShare, 100*largest)
	}
	if res.NoAddress > 0 {
		t.Errorf("%d of %d dropped or cut outputs named no read_artifact id", res.NoAddress, res.Shortened)
	}
	// The truth is OpenAI's own accounting, not contextwin's: an exact
	// session may count a little more than the model reads (the margin
	// is on the safe side), never noticeably less.
	if _, p95, _ := Summary(res.ErrExact); p95 > 2 {
		t.Errorf("exact sessions are off by %.2f %% at p95; want under 2 %%", p95)
	}
	if under := Under(res.ErrExact); under > 0.5 {
		t.Errorf("exact sessions undercount by up to %.2f %%: a request could pass for smaller than it is", under)
	}
}

// TestPoolIsAdditive checks what the ground truth relies on: the exact
// count of a run of pool lines is the sum of their counts.
func TestPoolIsAdditive(t *testing.T) {
	p := newPool(4_000)
	enc := tokens.For(tokens.O200kBase)
	tr := newTruth(p)
	r := rand.New(rand.NewPCG(3, 3))
	for range 50 {
		text, n := p.text(r, 2_000)
		if got := enc.Count(text); got != n {
			t.Fatalf("pool text counts %d exactly, %d summed by line", got, n)
		}
		// With cuts and notes, as a cut output has them.
		cut := text[:len(text)/3] + "\n[… 12 lines (~300 tokens) cut here …]\n" + text[2*len(text)/3:]
		cut = strings.ToValidUTF8(cut, "")
		if got, want := tr.count(cut), enc.Count(cut); got != want {
			t.Fatalf("cut text: %d by line, %d exactly", got, want)
		}
	}
}
