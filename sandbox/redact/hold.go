package redact

import "slices"

// A Chat passes on a streamed text as soon as no text that may follow
// can change how it is redacted. unsettled finds where the part that can
// still change begins. More text can:
//   - change a match that reaches the end (a token that goes on, an
//     AWS key whose \b is not known yet, a key block without its end);
//   - complete a match that has begun: a token format's hint, whole or
//     its first letters, whose match may still come from there (the
//     pattern's beginnings, prefixOf, say so); a known value's form (its
//     seed's first letters, or more of the form); a contextual match's
//     name, whose value may come after it (the name is never replaced:
//     only what may be the value is held);
//   - make the end a suffix of a long known value (a piece of its second
//     half, as a word of its own);
//   - decode differently: an escape that has begun ("%4", "\u00", "=")
//     may end a secret the text before it begins, and a run of text with
//     escapes is looked at decoded;
//   - and, through all of these, change a match that reaches past where
//     they may start (they merge, or mask what it saw).

// unsettled returns where the end of s that text after it could still
// change (once s is redacted with it) begins; len(s) if none. sc is s
// scanned and hs its hits, at the given decoding depth; m, if not nil,
// what is known of s from before.
func (r *Redactor) unsettled(s string, sc scanned, hs []hit, depth int, m *memo) int {
	q := len(s)
	if i := escapeBegins(s); i >= 0 {
		x := s[:i]
		xs := r.scan(x)
		q = min(i, r.unsettled(x, xs, r.hitsOf(x, xs, false, depth), depth, m))
	} else {
		q = r.coming(s, sc, hs, depth, m)
	}
	return settle(q, s, hs)
}

// memo keeps what a Chat learnt of its text from one piece to the next:
// the candidates (a pattern's hint) from which no match can come. Text
// is only added, and what begins no match begins none once more is
// added: they are not tried again.
type memo struct {
	// off is where the text looked at starts in the whole stream.
	off int
	// dead holds, for a pattern and where its hint is in the stream,
	// where the text ended when no match could come from it (a shorter
	// text may still begin one).
	dead map[[2]int]int
}

func (m *memo) isDead(k, at, end int) bool {
	if m == nil {
		return false
	}
	e, ok := m.dead[[2]int{k, m.off + at}]
	return ok && e <= m.off+end
}

func (m *memo) bury(k, at, end int) {
	if m != nil {
		m.dead[[2]int{k, m.off + at}] = m.off + end
	}
}

// forget drops what is known of the text before off in the stream.
func (m *memo) forget(off int) {
	for key := range m.dead {
		if key[1] < off {
			delete(m.dead, key)
		}
	}
}

// settle moves q back to the start of every hit that may still change:
// one that reaches the end, or past q.
func settle(q int, s string, hs []hit) int {
	for moved := true; moved; {
		moved = false
		for _, h := range hs {
			if h.start < q && (h.to > q || h.to == len(s)) {
				q, moved = h.start, true
			}
		}
	}
	return q
}

// coming returns where the earliest match that may still come (or go
// on) past the end of s begins what it would replace; len(s) if none.
func (r *Redactor) coming(s string, sc scanned, hs []hit, depth int, m *memo) int {
	// A hit that reaches the end is held from its start (settle): what
	// may come after that start needs no look.
	q := len(s)
	for _, h := range hs {
		if h.to == len(s) {
			q = min(q, h.start)
		}
	}
	ps, os := patterns(), openings()
	var b []byte // s, for the patterns' start functions
	for k, p := range ps {
		tried := -1
		for _, a := range sc.found[k] {
			if a.at >= q || m.isDead(k, a.at, len(s)) {
				continue
			}
			st := a.at
			if p.lead != nil {
				if b == nil {
					b = []byte(s)
				}
				st = p.lead(b, a.at)
			}
			// The hints of one name ("keykeykey…") give one start,
			// tried once.
			if st >= q || st >= 0 && (st == tried || os[k].word && !wordStarts(s, hs, st)) {
				continue
			}
			tried = st
			if st < 0 || !mayCome(&p, &os[k], hs, s, st) {
				m.bury(k, a.at, len(s))
				continue
			}
			if os[k].head == nil {
				q = st
			} else if v := os[k].valueFrom(s[st:]); v >= 0 {
				q = min(q, st+v)
			}
		}
	}
	q = min(q, r.opening(s, sc, hs))
	if r != nil {
		q = min(q, r.formComing(s, sc, q))
	}
	if depth < maxDecodeDepth {
		q = min(q, r.decodedComing(s, sc, depth))
	}
	return q
}

// mayCome reports whether a match of p may still come from st in s, or
// go on past its end. A match found running to the end begins one (no
// need to look); one that ends before s does stays as it is (a key block
// up to its end line), though a longer text from st could begin one;
// with none, the pattern's beginnings decide.
func mayCome(p *pattern, o *opening, hs []hit, s string, st int) bool {
	for _, h := range hs {
		if h.from == st && h.to == len(s) {
			return true
		}
	}
	if m := p.at.FindStringIndex(s[st:]); m != nil {
		return st+m[1] == len(s)
	}
	return o.could(s[st:])
}

// opening returns where the longest end of s that begins a token
// format's hint or a known value's form starts, if a match may come from
// there; len(s) if none. The anchor table's state after the last byte
// stands for the longest end of s that begins a hint or seed, and its
// fail states for the shorter ones.
func (r *Redactor) opening(s string, sc scanned, hs []hit) int {
	t, ps, os := sc.t.anchors, patterns(), openings()
	for st := sc.state; st != 0; st = int(t.fail[st]) {
		i := len(s) - int(t.depth[st])
		for _, k := range t.open[st] {
			switch {
			case k < len(ps):
				// A contextual pattern's value comes after its hint;
				// the escapes are escapeBegins'.
				if !ps[k].contextual && (!os[k].word || wordStarts(s, hs, i)) && os[k].could(s[i:]) {
					return i
				}
			case k > len(ps):
				sd := sc.t.seeds[k-len(ps)-1]
				if l := r.literals[sd.literal]; !sd.end && commonPrefix(s[i:], l.value, l.fold) == len(s)-i {
					return i
				}
			}
		}
	}
	return len(s)
}

// wordStarts reports whether a match that starts with \b may start at i:
// the byte before is no word character, or will be masked as part of a
// secret found before.
func wordStarts(s string, hs []hit, i int) bool {
	if i == 0 || !isWord(s[i-1]) {
		return true
	}
	for _, h := range hs {
		if h.start < i && i <= h.end {
			return true
		}
	}
	return false
}

// formComing returns where the earliest form of a known value that the
// end of s begins, or a piece of a value's second half that it may
// become, starts; q if none is earlier.
func (r *Redactor) formComing(s string, sc scanned, q int) int {
	ps := patterns()
	for j, as := range sc.found[len(ps)+1:] {
		sd := sc.t.seeds[j]
		if sd.end {
			continue
		}
		l := r.literals[sd.literal]
		for _, a := range as {
			if n := len(s) - a.at; a.at < q && n < len(l.value) && commonPrefix(s[a.at:], l.value, l.fold) == n {
				q = a.at
			}
		}
	}
	// The forms past the table's seeds.
	for _, i := range sc.t.rest {
		l := r.literals[i]
		for n := min(len(l.value)-1, len(s)); n > 0 && len(s)-n < q; n-- {
			if commonPrefix(s[len(s)-n:], l.value, l.fold) == n {
				q = len(s) - n
				break
			}
		}
	}
	for _, l := range r.literals {
		if l.pieces {
			q = min(q, pieceComing(s, l, q))
		}
	}
	return q
}

// pieceComing returns where the end of s starts that may be the start of
// a suffix of l long enough to stand for it (see piece), its end still
// to come; q if none starts earlier. A piece stands as a word of its
// own, so only the ends of s that start at a word's edge are tried.
func pieceComing(s string, l literal, q int) int {
	v := l.value
	latest := len(v) - max(seedLen, len(v)/2) // where a suffix long enough starts, at the latest
	from := len(s)
	for from > 0 && len(s)-from < len(v)-1 && l.bytes.has(s[from-1]) {
		from--
	}
	for p := from; p < q; p++ {
		if !wordEdge(s, p) {
			continue
		}
		if j := indexFold(v[:len(v)-1], s[p:], l.fold); j >= 0 && j <= latest {
			return p
		}
	}
	return q
}

// decodedComing looks at the last run of s decoded, if it holds an
// escape: a secret may still come in the decoded text. It returns where
// in s the decoded text that may change starts; len(s) if none.
func (r *Redactor) decodedComing(s string, sc scanned, depth int) int {
	// The runs decodedHits decodes: around each escape (in order), but
	// for the escapes inside the run before.
	triggers := sc.found[len(patterns())]
	slices.SortFunc(triggers, func(a, b anchor) int { return a.at - b.at })
	done := 0
	for _, a := range triggers {
		if a.at < done || escapeLen(s, a.at) == 0 {
			continue
		}
		start, end := runAround(s, a.at)
		if done = end; end < len(s) {
			continue
		}
		dec, offs := decode(s[start:])
		if offs == nil {
			continue
		}
		ds := r.scan(dec)
		if q := r.unsettled(dec, ds, r.hitsOf(dec, ds, false, depth+1), depth+1, nil); q < len(dec) {
			return start + offs[q]
		}
		return len(s)
	}
	return len(s)
}
