package tokens

import (
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// A long text is counted on several cores: a 50 KB read was counted on
// one while the others waited, and its count is on the path from the
// tool's end to the editor hearing of it.
//
// The text is cut into parts, each split from its own start. A piece's
// end depends only on where the piece starts (next reads forward), so two
// splits that share a boundary agree from there on. A part's split is
// only right from where the split of the part before meets it: that one
// goes on past its end until it reaches a boundary the next part also
// has, among that part's first pieces (its head). The count is each
// part's pieces, less those of the next part's head that the part before
// counted again. A part that is not met within its head (a piece longer
// than the head could be, in text made to do it) leaves the count to
// one core.
const (
	// parallelMin is the shortest text counted in parts, and each part
	// is at least as long.
	parallelMin = 16 << 10
	// headPieces is how many of a part's first pieces the part before
	// may meet it in; splits meet within a piece or two in real text.
	headPieces = 64
)

// part is one part of a text counted in parts.
type part struct {
	start int // where its split starts: a character's start
	// head holds the ends of its first pieces and the count up to each;
	// headDone is closed once it is complete (or the part ended).
	head     []mark
	headDone chan struct{}
	n        int    // the count of the pieces it split
	met      int    // how many of the next part's head it counted again
	misses   []miss // pieces not in the cache, counted by the library
	ok       bool   // it met the next part (always, for the last)
}

type mark struct{ end, count int }

type miss struct {
	piece string
	count int32
}

// parts is how many parts s is counted in: one per core, each at least
// parallelMin long.
func parts(s string) int {
	return min(runtime.GOMAXPROCS(0), len(s)/parallelMin)
}

// countParts counts s (valid UTF-8) in k parts; false if a part was not
// met within its head, and s must be counted on one core.
func (e *exact) countParts(s string, k int) (int, bool) {
	ps := make([]part, 0, k)
	for j := range k {
		start := j * len(s) / k
		for start < len(s) && !utf8.RuneStart(s[start]) {
			start++
		}
		if start == len(s) || len(ps) > 0 && start == ps[len(ps)-1].start {
			continue // a part must hold a character of its own
		}
		ps = append(ps, part{start: start, headDone: make(chan struct{})})
	}
	e.mu.RLock()
	var wg sync.WaitGroup
	var stop atomic.Bool
	for j := 1; j < len(ps); j++ {
		wg.Go(func() { e.countPart(s, ps, j, &stop) })
	}
	e.countPart(s, ps, 0, &stop)
	wg.Wait()
	e.mu.RUnlock()

	n := 0
	ok := true
	for j := range ps {
		n += ps[j].n - ps[j].met
		ok = ok && ps[j].ok
	}
	e.mu.Lock()
	for j := range ps {
		for _, m := range ps[j].misses {
			e.remember(m.piece, m.count)
		}
	}
	e.mu.Unlock()
	return n, ok
}

// countPart splits part j of s from its start until it meets part j+1 (or
// to the end of s for the last part), with e.mu read-locked. A part that
// is not met sets stop, and the others give up.
func (e *exact) countPart(s string, ps []part, j int, stop *atomic.Bool) {
	p := &ps[j]
	var next *part
	if j+1 < len(ps) {
		next = &ps[j+1]
	}
	headOpen := true
	defer func() {
		if headOpen {
			close(p.headDone)
		}
		if !p.ok {
			stop.Store(true)
		}
	}()
	for i, pieces := p.start, 0; i < len(s); pieces++ {
		if pieces&1023 == 1023 && stop.Load() {
			return
		}
		l := e.split.next(s, i)
		p.n += e.cached(s[i:i+l], &p.misses)
		i += l
		if headOpen {
			p.head = append(p.head, mark{i, p.n})
			if len(p.head) == headPieces {
				close(p.headDone)
				headOpen = false
			}
		}
		if next == nil || i < next.start {
			continue
		}
		<-next.headDone
		h := next.head
		at := sort.Search(len(h), func(x int) bool { return h[x].end >= i })
		if at < len(h) && h[at].end == i {
			p.met, p.ok = h[at].count, true
			return
		}
		if at == len(h) {
			return // past its head: not met
		}
	}
	// The end of s. A part before another meets it at the latest there,
	// where the other's head ends if it got that far.
	p.ok = next == nil
}

// cached returns the count of piece p, with e.mu read-locked: from the
// cache, else from the library, noting p in misses for the cache.
func (e *exact) cached(p string, misses *[]miss) int {
	if len(p) == 1 {
		return 1 // every byte is a token of its own in both encodings
	}
	if len(p) > maxPiece {
		return e.library(p)
	}
	if c, ok := e.pieces[p]; ok {
		return int(c)
	}
	c := e.library(p)
	*misses = append(*misses, miss{p, int32(c)})
	return c
}
