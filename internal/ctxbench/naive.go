package ctxbench

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
)

// naiveResult measures the harness bridle is compared with: it keeps the
// whole conversation until the window is full, then drops the oldest
// messages (whatever they are) until the request fits, and cuts a single
// message that cannot fit at all.
type naiveResult struct {
	Requests, Overflows, Complete int
	StablePairs, Pairs            int
	Tokens, CachedTokens          int64
}

func (r *naiveResult) add(o naiveResult) {
	r.Requests += o.Requests
	r.Overflows += o.Overflows
	r.Complete += o.Complete
	r.StablePairs += o.StablePairs
	r.Pairs += o.Pairs
	r.Tokens += o.Tokens
	r.CachedTokens += o.CachedTokens
}

// naive plays plan p's conversation through the naive harness. fixed is
// the system prompt and tool catalogue, as bridle sent them.
func naive(p plan, pool *pool, tr *truth, fixed int) naiveResult {
	type msg struct {
		tokens int
		id     int // 1 + index of the pin it carries, -1 for the first request
	}
	m := p.profile.model
	budget := m.Window - min(m.MaxOutput, m.Window/4)
	var hist []msg
	total := fixed
	var res naiveResult
	pins := 0
	oldest := -1 // position of the oldest message kept, to tell a drop
	dropped := 0
	prevTotal := 0
	push := func(tokens, id int) {
		hist = append(hist, msg{tokens, id})
		total += tokens
	}
	request := func() {
		for total > budget && len(hist) > 1 {
			total -= hist[0].tokens
			hist = hist[1:]
			dropped++
		}
		if total > budget { // one message larger than the window: cut it
			cut := total - budget
			hist[0].tokens -= cut
			total -= cut
			dropped++ // its bytes changed too
		}
		res.Requests++
		res.Tokens += int64(total)
		have := map[int]bool{}
		for _, h := range hist {
			have[h.id] = true
		}
		ok := have[-1]
		for i := 1; i <= pins; i++ {
			ok = ok && have[i]
		}
		if ok {
			res.Complete++
		}
		if oldest >= 0 {
			res.Pairs++
			if oldest == dropped {
				// Nothing dropped: the previous request is a prefix of this one.
				res.StablePairs++
				res.CachedTokens += int64(prevTotal)
			} else {
				res.CachedTokens += int64(fixed)
			}
		}
		oldest, prevTotal = dropped, total
	}
	for i, t := range p.turns {
		for _, pin := range t.pins {
			pins++
			_, text, _ := strings.Cut(pin, " ")
			push(tr.count(text)+perMessage, pins)
		}
		if i == 0 {
			push(tr.count(p.first)+perMessage, -1)
		} else {
			push(tr.count(t.prompt)+perMessage, 0)
		}
		for _, c := range t.calls {
			request()
			n := tr.count(c.text) + perMessage
			if c.out > 0 {
				in, _ := json.Marshal(emitInput{Tokens: c.out, Seed: c.seed})
				call, _ := json.Marshal(struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				}{"emit", string(in)})
				n += tr.count(string(call))
				_, out := pool.text(rand.New(rand.NewPCG(c.seed, 1)), c.out)
				push(n, 0)
				push(out+perMessage, 0)
				continue
			}
			push(n, 0)
		}
	}
	return res
}
