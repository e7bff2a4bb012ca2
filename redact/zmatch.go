package redact

// A known value is compared with the text where a seed of it (its first
// or last 8 bytes) was found. A text can hold a seed at every byte: "aaaa…"
// for a value of a's ending in b. Compared from each, a value of n bytes
// would cost n at each, and the text's square in all. The comparisons
// share what they learnt instead, as the Z algorithm does: the value's Z
// array says how much of the value each of its shifts repeats, so that
// each byte of the text is compared once for all the seeds that cover it.

// zArray returns, for each d >= 1, how many bytes v and v[d:] share from
// their starts (ignoring ASCII case if fold); z[0] is len(v).
func zArray(v string, fold bool) []int32 {
	z := make([]int32, len(v))
	if len(v) == 0 {
		return z
	}
	z[0] = int32(len(v))
	l, r := 0, 0
	for i := 1; i < len(v); i++ {
		n := 0
		if i < r {
			n = min(r-i, int(z[i-l]))
		}
		for i+n < len(v) && sameByte(v[n], v[i+n], fold) {
			n++
		}
		z[i] = int32(n)
		if i+n > r {
			l, r = i, i+n
		}
	}
	return z
}

// prefixLens returns, for each of n positions of s (pos(k), increasing),
// how many bytes s from there shares with pat from its start; z is pat's
// Z array. The work is linear in s and n, however the positions overlap.
func prefixLens(s, pat string, z []int32, fold bool, n int, pos func(int) int, w *meter) []int {
	out := make([]int, n)
	// s[bs:be] == pat[:be-bs]: the furthest reach of a comparison so far.
	bs, be := 0, 0
	compared := 0
	for k := range n {
		i := pos(k)
		m := 0
		if i < be {
			if d := int(z[i-bs]); d < be-i {
				out[k] = d
				continue
			}
			m = be - i
		}
		j := m
		for i+m < len(s) && m < len(pat) && sameByte(s[i+m], pat[m], fold) {
			m++
		}
		compared += m - j + 1
		out[k] = m
		if i+m > be {
			bs, be = i, i+m
		}
	}
	w.add(compared)
	return out
}

// suffixLens returns, for each of n positions of s (end(k), increasing),
// how many bytes s up to there shares with pat at its end; zr is the Z
// array of pat reversed.
func suffixLens(s, pat string, zr []int32, fold bool, n int, end func(int) int, w *meter) []int {
	out := make([]int, n)
	L := len(pat)
	// s[bs:be] == pat[L-(be-bs):]: the furthest reach back so far.
	bs, be := len(s), len(s)
	compared := 0
	for k := n - 1; k >= 0; k-- {
		e := end(k)
		m := 0
		if bs < e && e < be {
			if d := int(zr[be-e]); d < e-bs {
				out[k] = d
				continue
			}
			m = e - bs
		}
		j := m
		for m < e && m < L && sameByte(s[e-1-m], pat[L-1-m], fold) {
			m++
		}
		compared += m - j + 1
		out[k] = m
		if e-m < bs {
			bs, be = e-m, e
		}
	}
	w.add(compared)
	return out
}

// reverseBytes returns s with its bytes in the opposite order.
func reverseBytes(s string) string {
	b := make([]byte, len(s))
	for i := range len(s) {
		b[len(s)-1-i] = s[i]
	}
	return string(b)
}
