package ctxbench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/bridle-dev/bridle/tokens"
)

// pool is a fixed set of realistic lines (Go code, logs, JSON, test
// output, prose) that tool outputs are made of. Every line ends with a
// newline and none starts with one, so the o200k count of a run of lines
// is the sum of their counts (TestPoolIsAdditive checks it): the ground
// truth of a request costs a map lookup per line instead of tokenizing
// hundreds of megabytes.
type pool struct {
	lines  []string
	counts []int
	kinds  []int // each line's kind, 0 to kinds-1
}

// kinds is how many kinds of line the pool has.
const kinds = 6

var words = strings.Fields(`the a request file value error context window output session model tool
result turn write read cache build test module package import return func struct field index
table query index node path retry budget token summary compact handle artifact stream parse
config server client handler timeout deadline buffer channel worker queue event log store`)

var idents = strings.Fields(`ctx err req resp buf sess store rec seq key cfg opts conn w r n i
appendEvent decodeAll projectHistory countTokens readFrame writeReply openRoot spillOutput`)

func newPool(n int) *pool {
	r := rand.New(rand.NewPCG(0, 42))
	p := &pool{}
	enc := tokens.For(tokens.O200kBase)
	pick := func(list []string) string { return list[r.IntN(len(list))] }
	for len(p.lines) < n {
		var s string
		kind := r.IntN(kinds)
		p.kinds = append(p.kinds, kind)
		switch kind {
		case 0:
			s = fmt.Sprintf("\tif %s := %s.%s(%s, %s); %s != nil {", pick(idents), pick(idents), pick(idents), pick(idents), pick(idents), pick(idents))
		case 1:
			s = fmt.Sprintf("2026-12-02T10:%02d:%02d.%03dZ INFO %s id=%08x path=/api/v1/%s/%d status=%d latency=%dms",
				r.IntN(60), r.IntN(60), r.IntN(1000), pick(words), r.Uint32(), pick(words), r.IntN(10000), 200+r.IntN(4)*100, r.IntN(900))
		case 2:
			s = fmt.Sprintf(`{"id": %d, "name": "%s_%s", "tags": ["%s", "%s"], "score": %.3f, "ok": %v}`,
				r.IntN(100000), pick(words), pick(words), pick(words), pick(words), r.Float64(), r.IntN(2) == 0)
		case 3:
			s = fmt.Sprintf("--- FAIL: Test%s%s (0.%02ds)\n    %s_test.go:%d: got %d, want %d",
				title(pick(words)), title(pick(words)), r.IntN(100), pick(words), r.IntN(900), r.IntN(50), r.IntN(50))
		case 4:
			s = fmt.Sprintf("%s/%s/%s.go:%d:%d: %s %s %s", pick(words), pick(words), pick(idents), r.IntN(2000), r.IntN(80), pick(words), pick(words), pick(words))
		default:
			var b strings.Builder
			b.WriteString(title(pick(words)))
			for range 6 + r.IntN(14) {
				b.WriteString(" " + pick(words))
			}
			b.WriteString(".")
			s = b.String()
		}
		s += "\n"
		p.lines = append(p.lines, s)
		p.counts = append(p.counts, enc.Count(s))
	}
	return p
}

// text returns about n tokens of lines chosen by r, and their exact count.
func (p *pool) text(r *rand.Rand, n int) (string, int) { return p.textOf(r, n, -1) }

// textOf is text of lines of one kind (all kinds if kind < 0).
func (p *pool) textOf(r *rand.Rand, n, kind int) (string, int) {
	var b strings.Builder
	have := 0
	for have < n {
		i := r.IntN(len(p.lines))
		if kind >= 0 && p.kinds[i] != kind {
			continue
		}
		b.WriteString(p.lines[i])
		have += p.counts[i]
	}
	return b.String(), have
}

// prose returns about n tokens of sentences on one line each.
func prose(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < 5*n {
		b.WriteString(title(words[r.IntN(len(words))]))
		for range 5 + r.IntN(12) {
			b.WriteString(" " + words[r.IntN(len(words))])
		}
		b.WriteString(". ")
	}
	return strings.TrimSpace(b.String())
}

// truth counts text exactly with o200k_base: line by line through a
// cache, which is exact for text made of whole lines (see pool). Texts
// are cached whole too, since a request repeats most of the previous one.
type truth struct {
	enc   tokens.Counter
	mu    sync.Mutex
	lines map[string]int
	texts map[string]int
}

func newTruth(p *pool) *truth {
	t := &truth{enc: tokens.For(tokens.O200kBase), lines: map[string]int{}, texts: map[string]int{}}
	for i, l := range p.lines {
		t.lines[l] = p.counts[i]
	}
	return t
}

func (t *truth) count(s string) int {
	t.mu.Lock()
	n, ok := t.texts[s]
	t.mu.Unlock()
	if ok {
		return n
	}
	for rest := s; rest != ""; {
		// A line with the newlines that end it: a run of newlines is one
		// pre-token.
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			n += t.line(rest)
			break
		}
		for i+1 < len(rest) && rest[i+1] == '\n' {
			i++
		}
		n += t.line(rest[:i+1])
		rest = rest[i+1:]
	}
	t.mu.Lock()
	if len(t.texts) > 200_000 {
		clear(t.texts)
	}
	t.texts[s] = n
	t.mu.Unlock()
	return n
}

func (t *truth) line(l string) int {
	t.mu.Lock()
	n, ok := t.lines[l]
	t.mu.Unlock()
	if ok {
		return n
	}
	n = t.enc.Count(l)
	t.mu.Lock()
	if len(t.lines) > 500_000 {
		clear(t.lines)
	}
	t.lines[l] = n
	t.mu.Unlock()
	return n
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
