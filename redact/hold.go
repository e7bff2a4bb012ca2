package redact

import (
	"slices"
)

// A Chat passes on a streamed text as soon as no text that may follow
// can change how it is redacted. unsettled finds where the part that can
// still change begins. More text can:
//   - change a match that reaches the end (a token that goes on, an
//     AWS key whose \b is not known yet, a key block without its end,
//     a known value's form that a letter after it would make no word);
//   - complete a match that has begun: a token format's hint, whole or
//     its first letters, whose match may still come from there (the
//     pattern's beginnings, prefixOf, say so); a known value's form (its
//     seed's first letters, or more of the form); a contextual match's
//     name, whose value may come after it (the name is never replaced:
//     only what may be the value is held);
//   - make the end a suffix of a long known value (a piece of its second
//     half, as a word of its own);
//   - make the last lines a key's, with an end line after them;
//   - decode differently: an escape that has begun ("%4", "\u00", "=")
//     may end a secret the text before it begins, and the text is looked
//     at decoded, as it is and as an escape after it would make it;
//   - and, through all of these, change a match that reaches as far as
//     where they may start (they merge, or mask what it saw, or unmask
//     it if they go).

// unsettled returns where the end of s that text after it could still
// change (once s is redacted with it) begins; len(s) if none. sc is s
// scanned and hs its hits, each with its stage (stagedHits), at the
// given decoding depth; m, if not nil, what is known of s from before.
// fresh is where something new may
// still begin (a match, an escape): a hit that ends before it is final,
// though it may reach past where the text that may change begins.
func (r *Redactor) unsettled(s string, sc scanned, hs []hit, depth int, m *memo) (q, fresh int) {
	if i := escapeBegins(s); i >= 0 {
		// The text before the escape begun at i is looked at as if it
		// ended there. An escape begun at its own end is no longer in
		// doubt (s[i], which begins none with it, follows it), so this
		// is not asked again of it: a run of "%" or "\\" asked it once a
		// byte, and looked at the text again each time.
		x := s[:i]
		xs := r.scan(x)
		xs.within(sc)
		if sc.dec != nil {
			xs.dec = sc.dec[:i+1]
		}
		xh := r.stagedHits(x, xs, false, depth)
		fresh = min(i, r.coming(x, xs, xh, depth, m))
		if depth < maxDecodeDepth {
			// The escape makes the text one to decode, if it was not:
			// decoded, its end may be a secret's beginning that the
			// text as it is hides (by a match there that, decoded, is
			// no longer one).
			fresh = min(fresh, r.decodedComing(x, xs, depth, true, len(x)))
		}
		q = min(i, settle(fresh, x, xh))
	} else {
		fresh = r.coming(s, sc, hs, depth, m)
		q = fresh
	}
	return settle(q, s, hs), fresh
}

// memo keeps what a Chat learnt of its text from one piece to the next:
// the candidates (a pattern's hint) from which no match can come. Text
// is only added, and what begins no match begins none once more is
// added: they are not tried again, while the secrets found in the text
// (which mask it) stay the same.
type memo struct {
	// off is where the text looked at starts in the whole stream.
	off int
	// dead holds, for a pattern and where its hint is in the stream,
	// where the text ended when no match could come from it (a shorter
	// text may still begin one).
	dead map[[2]int]int
	// hits are the hits of the text last looked at, where they are in
	// the stream, and their stages.
	hits [][3]int
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

// found tells m the hits of its text: a hit that was not there before
// (or one that went) masks the text otherwise, and may make a candidate
// live again, so what m knew is dropped.
func (m *memo) found(hs []hit) {
	now := make([][3]int, 0, len(hs))
	for _, h := range hs {
		now = append(now, [3]int{m.off + h.start, m.off + h.end, h.stage})
	}
	var before [][3]int
	for _, h := range m.hits {
		if h[0] >= m.off {
			before = append(before, h)
		}
	}
	cmp := func(a, b [3]int) int { return slices.Compare(a[:], b[:]) }
	slices.SortFunc(now, cmp)
	slices.SortFunc(before, cmp)
	if !slices.Equal(now, before) {
		clear(m.dead)
	}
	m.hits = now
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
// one that reaches the end, or q: what it ends at may change (a hit there
// may go, or come, and mask it or not), and with it where it ends.
func settle(q int, s string, hs []hit) int {
	for moved := true; moved; {
		moved = false
		for _, h := range hs {
			if h.start < q && (h.to >= q || h.to == len(s)) {
				q, moved = h.start, true
			}
		}
	}
	return q
}

// coming returns where the earliest match that may still come (or go
// on) past the end of s begins what it would replace; len(s) if none.
// hs are the hits of s, each with its stage: each pattern looks at s
// with the hits of the stages before its masked, as it does to find its
// matches.
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
	v := maskedView{b: []byte(s)}
	v.mask(hs, sc.prior, literalStage)
	v.mask(hs, sc.prior, decodedStage)
	// u is s as its decoding would see it were an escape to come at its
	// end: the known values masked, the patterns' matches not (in a
	// decoded text only what an escape makes a secret is taken, and the
	// matches of s are no such). A match that an escape still to come
	// would make a secret is held too, no further back than maxDecoded.
	var u *maskedView
	if depth < maxDecodeDepth {
		u = &maskedView{b: slices.Clone(v.b)}
	}
	for k, p := range ps {
		sortAnchors(sc.found[k])
		views := []*maskedView{&v}
		if u != nil && v.patterns {
			views = append(views, u)
		}
		for i, w := range views {
			floor, same := 0, len(views) == 1 && (u == nil || !v.patterns)
			if i == 1 {
				floor = len(s) - maxDecoded - 1
			}
			tried := -1
			for _, a := range sc.found[k] {
				if a.at >= q || same && m.isDead(k, a.at, len(s)) {
					continue
				}
				ms, t := w.text(sc.work)
				if p.coming != nil {
					st, val := p.coming(t, a)
					if st < 0 {
						if same {
							m.bury(k, a.at, len(s))
						}
					} else {
						// The name starts at a word's boundary (nameAround)
						// in the text as the pattern sees it.
						if depth > 0 {
							val = st // as below: the name is held with its value
						}
						q = min(q, max(val, floor))
					}
					continue
				}
				st := a.at
				if p.lead != nil {
					st = p.lead(t, a)
				}
				// The hints of one name ("keykeykey…") give one start,
				// tried once.
				if st >= q || st >= 0 && (st == tried || os[k].word && !wordStarts(ms, hs, sc.prior, st)) {
					continue
				}
				tried = st
				if st < 0 || !mayCome(&p, &os[k], hs, ms, st, sc.work) {
					if same {
						m.bury(k, a.at, len(s))
					}
					continue
				}
				if os[k].head == nil || depth > 0 {
					// In a decoded text, the name or header before a
					// value is held with it: written with escapes, it may
					// be longer than the context a Chat keeps of what it
					// passed on.
					q = min(q, max(st, floor))
				} else if val := os[k].valueFrom(ms[st:], sc.work); val >= 0 {
					q = min(q, max(st+val, floor))
				}
			}
		}
		v.mask(hs, sc.prior, p.stage)
	}
	q = min(q, r.opening(s, sc, hs))
	if depth == 0 {
		q = min(q, orphanComing(s, hs, sc.midLine))
	}
	known := len(s) // where a known value's form still to come may start
	if r != nil {
		known = min(r.formComing(s, sc, len(s)), r.seedBegun(s, sc))
		q = min(q, known)
	}
	if depth < maxDecodeDepth {
		q = min(q, r.decodedComing(s, sc, depth, false, len(s)))
		if known < len(s) {
			// The form, once found, is masked before the text is decoded
			// and looked at, which may end a match there.
			q = min(q, r.decodedComing(s, sc, depth, false, known))
		}
	}
	return maskedEnd(s, sc, q)
}

// seedBegun returns where the longest end of s that begins a known
// value's form starts (opening's, for the seeds alone); len(s) if none.
func (r *Redactor) seedBegun(s string, sc scanned) int {
	t, ps := sc.t.anchors, patterns()
	for st := sc.state; st != 0; st = int(t.fail[st]) {
		i := len(s) - int(t.depth[st])
		for _, k := range t.open[st] {
			if k > len(ps) {
				sd := sc.t.seeds[k-len(ps)-1]
				if l := r.literals[sd.literal]; !sd.end && (!l.word || wordEdge(s, i)) && commonPrefix(s[i:], l.value, l.fold) == len(s)-i {
					return i
				}
			}
		}
	}
	return len(s)
}

// maskedEnd moves q back to the start of every candidate of a pattern
// that ends with \b (an AWS key) whose last byte or the one after it is
// at q or past it: a secret still to come at q is masked before the
// pattern looks (a known value, a key block), which may make a word end
// where a letter was.
func maskedEnd(s string, sc scanned, q int) int {
	if q == len(s) {
		return q // nothing to come: a match there is found, or held
	}
	ps, os := patterns(), openings()
	for moved := true; moved; {
		moved = false
		for k := range ps {
			if !os[k].wordEnd {
				continue
			}
			for _, a := range sc.found[k] {
				if a.at < q && q < a.at+ps[k].window {
					q, moved = a.at, true
				}
			}
		}
	}
	return q
}

// maskedView is a text as the patterns see it, stage by stage: with the
// hits of the stages before masked.
type maskedView struct {
	b []byte
	// patterns says a pattern's match was masked.
	patterns bool
	// s and t are b as a string and a text, made when first asked for
	// since b was last masked.
	s string
	t *text
}

// mask masks the hits of stage (found now, hs, or before, prior), but
// for those that reach the end: more text may make them go (a word that
// goes on), and what comes before them is then seen unmasked, as text
// after it may be (they are held, but what a match before them can
// become is asked as if they were not there).
func (v *maskedView) mask(hs, prior []hit, stage int) {
	for _, h := range slices.Concat(stageOf(hs, stage), stageOf(prior, stage)) {
		if h.start < h.end && h.to < len(v.b) {
			mask(v.b, []hit{h})
			v.t = nil
			v.patterns = v.patterns || stage >= firstPatternStage
		}
	}
}

// text returns the view as a string and as a text.
func (v *maskedView) text(w *meter) (string, *text) {
	if v.t == nil {
		v.s = string(v.b)
		v.t = &text{s: v.b, work: w}
	}
	return v.s, v.t
}

// mayCome reports whether a match of p may still come from st in s, or
// go on past its end. A match found running to the end begins one (no
// need to look); one that ends before s does stays as it is (a key block
// up to its end line), though a longer text from st could begin one;
// with none, the pattern's beginnings decide.
func mayCome(p *pattern, o *opening, hs []hit, s string, st int, w *meter) bool {
	for _, h := range hs {
		if h.from == st && h.to == len(s) {
			return true
		}
	}
	in := s[st:]
	if p.window >= 0 && len(in) > p.window {
		in = in[:p.window]
	}
	w.add(len(in))
	if m := p.at.FindStringIndex(in); m != nil {
		return st+m[1] == len(s)
	}
	return o.could(s[st:], w)
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
				if !ps[k].contextual && (!os[k].word || wordStarts(s, hs, sc.prior, i)) && os[k].could(s[i:], sc.work) {
					return i
				}
			case k > len(ps):
				sd := sc.t.seeds[k-len(ps)-1]
				if l := r.literals[sd.literal]; !sd.end && (!l.word || wordEdge(s, i)) && commonPrefix(s[i:], l.value, l.fold) == len(s)-i {
					return i
				}
			}
		}
	}
	return len(s)
}

// wordStarts reports whether a match that starts with \b may start at i:
// the byte before is no word character, or will be masked as part of a
// secret found before (in hs, or in what a Chat passed on, prior).
func wordStarts(s string, hs, prior []hit, i int) bool {
	if i == 0 || !isWord(s[i-1]) {
		return true
	}
	in := func(h hit) bool { return h.start < i && i <= h.end }
	return slices.ContainsFunc(hs, in) || slices.ContainsFunc(prior, in)
}

// formComing returns where the earliest form of a known value that the
// end of s begins, or a piece of a value's second half that it may
// become, starts; q if none is earlier.
func (r *Redactor) formComing(s string, sc scanned, q int) int {
	ps := patterns()
	for j, as := range sc.found[len(ps)+1:] {
		sd := sc.t.seeds[j]
		if sd.end || len(as) == 0 {
			continue
		}
		l := &r.literals[sd.literal]
		// Only a seed less than the form's length before the end may
		// begin it (the anchors are in order).
		from := len(s) - len(l.value) + 1
		i, _ := slices.BinarySearchFunc(as, from, func(a anchor, at int) int { return a.at - at })
		as = as[i:]
		for k, n := range l.prefixes(s, as, sc.work) {
			if a := as[k]; a.at < q && n == len(s)-a.at && (!l.word || wordEdge(s, a.at)) {
				q = a.at
				break
			}
		}
	}
	// The forms past the table's seeds.
	for _, i := range sc.t.rest {
		l := &r.literals[i]
		from := max(0, len(s)-len(l.value)+1)
		if from >= q {
			continue
		}
		ns := prefixLens(s, l.value, l.z, l.fold, len(s)-from, func(k int) int { return from + k }, sc.work)
		for k, n := range ns {
			if at := from + k; at < q && n == len(s)-at && (!l.word || wordEdge(s, at)) {
				q = at
				break
			}
		}
	}
	for i := range r.literals {
		if l := &r.literals[i]; l.pieces {
			q = min(q, pieceComing(s, l, q, sc.work))
		}
	}
	return q
}

// pieceComing returns where the end of s starts that may be the start of
// a suffix of l long enough to stand for it (see piece), its end still
// to come; q if none starts earlier. A piece stands as a word of its
// own, so only the ends of s that start at a word's edge count.
func pieceComing(s string, l *literal, q int, w *meter) int {
	v := l.value
	latest := len(v) - max(seedLen, len(v)/2) // where a suffix long enough starts, at the latest
	from := len(s)
	for from > 0 && len(s)-from < len(v)-1 && l.bytes.has(s[from-1]) {
		from--
	}
	if from >= q {
		return q
	}
	// The end of s from p is in v (but its last byte) at j <= latest if,
	// for some e, the end of s and v[:e] share len(s)-p bytes and
	// e-(len(s)-p) <= latest. How many they share, for every e, is the
	// common prefix of s's end reversed with v's start reversed from
	// len(v)-1-e: one linear pass with the Z array of the first.
	tail := reverseBytes(s[from:])
	shared := prefixLens(l.rev, tail, zArray(tail, false), false, len(l.rev), func(x int) int { return x }, w)
	// edge[i] is the first word edge at or after from+i.
	edge := make([]int, len(s)-from+1)
	edge[len(s)-from] = len(s)
	for i := len(s) - 1; i >= from; i-- {
		edge[i-from] = edge[i-from+1]
		if wordEdge(s, i) {
			edge[i-from] = i
		}
	}
	w.add(len(tail) + len(l.rev))
	best := q
	for x, c := range shared {
		if c == 0 {
			continue
		}
		e := len(l.rev) - x // the end of v's prefix the end of s is matched with
		if p := edge[len(s)-c-from]; p < best && p < len(s) && e-(len(s)-p) <= latest {
			best = p
		}
	}
	return best
}

// decodedComing looks at s decoded, if it holds an escape (or, escaped,
// is to have one after it): a secret may still come in the decoded text,
// which is looked at as decodedHits looks at it, with the known values
// found (now and before, and from maskFrom on) masked. It returns where
// in s the decoded text that may change starts; len(s) if none.
func (r *Redactor) decodedComing(s string, sc scanned, depth int, escaped bool, maskFrom int) int {
	triggers := sc.found[len(patterns())]
	if !escaped && !slices.ContainsFunc(triggers, func(a anchor) bool { return escapeLen(s, a.at) > 0 }) {
		return len(s)
	}
	var known []hit
	if r != nil {
		for _, h := range r.literalHits(s, sc.t, sc.found[len(patterns())+1:], sc.work) {
			if sc.takes(h.start, h.from, h.to) {
				known = append(known, h)
			}
		}
	}
	if maskFrom < len(s) {
		known = append(known, hit{start: maskFrom, end: len(s), from: maskFrom, to: len(s), stage: literalStage})
	}
	dec, ds := r.decoded(s, sc, known, 0, len(s))
	q, _ := r.unsettled(dec, ds, r.stagedHits(dec, ds, false, depth+1), depth+1, nil)
	if q == len(dec) {
		return len(s)
	}
	// A secret found decoded is no longer than maxDecoded as written: one
	// still to come that reaches past the end begins no further back.
	return max(ds.dec[q], len(s)-maxDecoded-1)
}
